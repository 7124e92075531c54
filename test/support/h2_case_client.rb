# frozen_string_literal: true

require_relative "h2_frames"
require_relative "hpack_decoder"
require_relative "hpack_encoder"

# One HTTP/2 connection for the conformance cases (test/test_http2_cases.rb): the handshake
# done (preface and SETTINGS both ways, both acknowledged), then frames sent as the case
# writes them, right or wrong, and what came back read as events: a header block decoded
# (HPACK with Huffman and the dynamic table, so every block is read in order), a DATA frame,
# a RST_STREAM, a GOAWAY or the end of the connection. The server's WINDOW_UPDATEs and SETTINGS
# are taken on the way (the increments summed by stream); its SETTINGS are acknowledged.
class H2CaseClient
  ERRORS = { no_error: 0x0, protocol_error: 0x1, internal_error: 0x2, flow_control_error: 0x3, settings_timeout: 0x4,
             stream_closed: 0x5, frame_size_error: 0x6, refused_stream: 0x7, cancel: 0x8, compression_error: 0x9,
             connect_error: 0xa, enhance_your_calm: 0xb, inadequate_security: 0xc, http_1_1_required: 0xd }.freeze
  TYPES = H2Frames::TYPES
  END_STREAM = H2Frames::END_STREAM
  END_HEADERS = H2Frames::END_HEADERS
  PADDED = H2Frames::PADDED
  PRIORITY = H2Frames::PRIORITY
  ACK = H2Frames::ACK

  # What the server sent: a frame, with fields when it ended a header block; :closed when the
  # connection ended, :timeout when nothing came in time.
  Event = Struct.new(:type, :flags, :stream, :payload, :fields) do
    def goaway_code
      payload.byteslice(4, 4).unpack1("N")
    end

    def goaway_last_stream
      payload.unpack1("N") & 0x7fffffff
    end

    def end_stream?
      flags.anybits?(END_STREAM)
    end
  end

  # A response read to its END_STREAM: the head's fields, DATA payloads joined, the trailers.
  Response = Struct.new(:fields, :body, :data_frames, :trailers) do
    def status
      fields.assoc(":status")&.last
    end
  end

  attr_reader :server_settings, :scheme, :socket, :window_updates

  # socket: connected (TCP, or TLS that chose h2); settings: the client's first SETTINGS;
  # timeout: how long a read waits for the server unless told.
  def initialize(socket, scheme:, settings: {}, handshake: true, timeout: 3)
    @socket = socket
    @timeout = timeout
    @scheme = scheme
    @decoder = HpackDecoder.new
    @encoder = HpackEncoder.new
    @server_settings = {}
    @block = nil
    @ping = 0
    @held = [] # other streams' HEADERS and DATA read while a response was awaited
    @window_updates = Hash.new(0) # the server's WINDOW_UPDATE increments, by stream (0: the connection)
    @frames = H2Frames.new(socket, settings: settings, greet: handshake)
    complete_handshake if handshake
  end

  # The bytes the server must see first (RFC 9113 §3.4), for cases that write their own.
  def self.preface
    H2Frames::PREFACE
  end

  def write(type, flags, stream, payload = "", length: nil)
    @frames.write_frame(type, flags, stream, payload, **(length ? { length: length } : {}))
  rescue Errno::EPIPE, Errno::ECONNRESET, OpenSSL::SSL::SSLError, IOError
    nil # the server may close while we write what it refuses: the read says how
  end

  def write_raw(bytes)
    @socket.write(bytes)
  rescue Errno::EPIPE, Errno::ECONNRESET, OpenSSL::SSL::SSLError, IOError
    nil
  end

  # A request's fields, as [name, value] pairs in order (the pseudo-header fields first).
  def self.request_fields(scheme, path = "/", method: "GET", extra: [])
    [[":method", method], [":scheme", scheme], [":path", path], [":authority", "localhost"], *extra]
  end

  def request_fields(...)
    self.class.request_fields(@scheme, ...)
  end

  def block(fields, huffman: false)
    huffman ? HpackEncoder.new(huffman: true).encode(fields) : @encoder.encode(fields)
  end

  # HEADERS for stream: fields (a request's by default) or a header block already written.
  def headers(stream, fields = request_fields, end_stream: true, end_headers: true, flags: 0, prefix: "".b)
    fragment = fields.is_a?(String) ? fields : block(fields)
    flags |= END_STREAM if end_stream
    flags |= END_HEADERS if end_headers
    write(:headers, flags, stream, prefix + fragment)
  end

  def data(stream, payload, end_stream: true, flags: 0)
    write(:data, flags | (end_stream ? END_STREAM : 0), stream, payload)
  end

  def settings(values, stream: 0)
    write(:settings, 0, stream, H2Frames.settings_payload(values))
  end

  def window_update(stream, increment)
    write(:window_update, 0, stream, [increment].pack("N"))
  end

  def rst_stream(stream, code = :cancel)
    write(:rst_stream, 0, stream, [ERRORS.fetch(code)].pack("N"))
  end

  # PRIORITY's five bytes: the stream depended on and the weight less one (§6.3).
  def priority_payload(depends_on, weight: 16, exclusive: false)
    [depends_on | (exclusive ? 0x80000000 : 0), weight - 1].pack("NC")
  end

  # The next event, at most timeout seconds away.
  def next_event(timeout: @timeout)
    loop do
      frame = @frames.read_frame(timeout: timeout)
      return Event.new(:closed) if frame.nil?

      event = take(frame)
      return event if event
    end
  rescue H2Frames::Timeout
    Event.new(:timeout)
  end

  # Events until one for which the block is true (returned), or the connection ends or
  # nothing more comes (that event returned).
  def wait_for(timeout: @timeout)
    loop do
      event = next_event(timeout: timeout)
      return event if %i[closed timeout].include?(event.type) || yield(event)
    end
  end

  # The connection's end as the server made it: the GOAWAY event, or :closed / :timeout.
  def connection_end(timeout: @timeout)
    wait_for(timeout: timeout) { |event| event.type == :goaway }
  end

  # A stream's end by an error: its RST_STREAM, or the connection's GOAWAY (a connection
  # error may stand in for a stream error, §5.4.2), or :closed / :timeout.
  def stream_reset(stream, timeout: @timeout)
    wait_for(timeout: timeout) { |event| event.type == :goaway || (event.type == :rst_stream && event.stream == stream) }
  end

  # A PING answered with its payload: the connection still serves. Returns the event that
  # ended the wait (a PING ACK when alive).
  def ping(timeout: @timeout)
    @ping += 1
    payload = format("case%04d", @ping)
    write(:ping, 0, 0, payload)
    wait_for(timeout: timeout) do |event|
      event.type == :goaway || (event.type == :ping && event.flags.anybits?(ACK) && event.payload == payload)
    end
  end

  # Reads stream's response to its END_STREAM; window: a WINDOW_UPDATE of each DATA's size on
  # the stream and the connection, so that bodies larger than the windows come. Returns the
  # Response, or the event (RST_STREAM, GOAWAY, :closed, :timeout) that cut it short.
  def response(stream, timeout: 3, window: true)
    response = Response.new(nil, +"".b, [], nil)
    loop do
      event = @held.find { |held| held.stream == stream }&.then { |held| @held.delete(held) } || next_event(timeout: timeout)
      return event if %i[closed timeout goaway].include?(event.type) || (event.type == :rst_stream && event.stream == stream)

      unless event.stream == stream
        @held << event if %i[headers data].include?(event.type) && event.stream.positive?
        next
      end

      case event.type
      when :headers
        response.fields ? response.trailers = event.fields : response.fields = event.fields
        response.fields = nil if response.status&.start_with?("1") && !event.end_stream? # 1xx: the head comes next
      when :data
        response.body << event.payload
        response.data_frames << event.payload.bytesize
        if window && !event.payload.empty?
          window_update(0, event.payload.bytesize)
          window_update(stream, event.payload.bytesize) unless event.end_stream?
        end
      end
      return response if event.end_stream?
    end
  end

  private

  def complete_handshake
    settings = acked = false
    until settings && acked
      event = next_event
      raise "handshake: the server sent #{event.type} before its SETTINGS and our ACK" if %i[closed timeout goaway].include?(event.type)

      settings ||= event.type == :settings && event.flags.nobits?(ACK)
      acked ||= event.type == :settings && event.flags.anybits?(ACK)
    end
  end

  # The frame as an event; SETTINGS acknowledged, header blocks gathered and decoded, DATA
  # and HEADERS without their padding.
  def take(frame)
    type = TYPES.key(frame.type) || frame.type
    payload = frame.payload
    case type
    when :settings
      if frame.flags.nobits?(ACK)
        @server_settings.merge!(frame.settings)
        write(:settings, ACK, 0)
      end
    when :headers, :push_promise
      payload = unpad(payload, frame.flags)
      payload = payload.byteslice(5..) if type == :headers && frame.flags.anybits?(PRIORITY)
      payload = payload.byteslice(4..) if type == :push_promise
      @block = [Event.new(type, frame.flags, frame.stream, payload), +payload.b]
      return end_block if frame.flags.anybits?(END_HEADERS)

      return nil
    when :continuation
      @block[1] << payload
      return frame.flags.anybits?(END_HEADERS) ? end_block : nil
    when :data
      payload = unpad(payload, frame.flags)
    when :window_update
      @window_updates[frame.stream] += payload.unpack1("N") & 0x7fffffff
    end
    Event.new(type, frame.flags, frame.stream, payload)
  end

  def end_block
    event, fragment = @block
    @block = nil
    event.fields = @decoder.decode(fragment)
    event
  end

  def unpad(payload, flags)
    return payload if flags.nobits?(PADDED)

    pad = payload.getbyte(0)
    payload.byteslice(1, payload.bytesize - 1 - pad)
  end
end
