# frozen_string_literal: true

require "zlib"
require_relative "h2_case_client"
require_relative "ws_frame_builder"

# WebSockets on the streams of one HTTP/2 connection (RFC 8441), for tests: each opened by an
# extended CONNECT (:protocol websocket), its frames sent masked in DATA frames and read back
# from the stream's DATA, several at once on the connection. Frames of every stream are read
# as they come and kept per stream; the windows are granted as DATA is read, but for streams
# held (hold), whose window stays closed: a client that does not read that WebSocket. What it
# sends keeps within the server's windows (send_within_window waits for room).
class H2WebSockets
  Frame = Struct.new(:fin, :rsv1, :opcode, :payload) do
    def close_code
      payload.bytesize >= 2 ? payload.unpack1("n") : nil
    end
  end

  # A stream's answer to its CONNECT: the head's fields, or the event that came instead.
  Opened = Struct.new(:fields, :event) do
    def status
      fields&.assoc(":status")&.last
    end

    def field(name)
      fields&.assoc(name)&.last
    end
  end

  attr_reader :h2

  def initialize(socket, scheme: "http", settings: {}, timeout: 5)
    @h2 = H2CaseClient.new(socket, scheme: scheme, settings: settings, timeout: timeout)
    @timeout = timeout
    @bytes = Hash.new { |hash, key| hash[key] = +"".b }
    @heads = {}
    @ended = {}
    @resets = {}
    @held = {}
    @deflate = {}
    @sent = Hash.new(0) # DATA bytes sent, by stream (0: all of them)
  end

  # Bytes the server's windows take now on stream (RFC 9113 §6.9: the connection's starts at
  # 65,535 whatever SETTINGS say, a stream's at SETTINGS_INITIAL_WINDOW_SIZE).
  def window(stream)
    connection = 65_535 + @h2.window_updates[0] - @sent[0]
    [connection, @h2.server_settings.fetch(4, 65_535) + @h2.window_updates[stream] - @sent[stream]].min
  end

  def enable_connect_protocol?
    @h2.server_settings[8] == 1
  end

  # Opens a WebSocket on stream: its CONNECT and the answer's head (Opened).
  def open(stream, path, fields: [], deflate: false)
    extra = [[":protocol", "websocket"], ["sec-websocket-version", "13"], *fields]
    extra << ["sec-websocket-extensions", "permessage-deflate; client_max_window_bits"] if deflate
    @h2.headers(stream, @h2.request_fields(path, method: "CONNECT", extra: extra), end_stream: false)
    pump { @heads.key?(stream) || @resets.key?(stream) }
    opened = Opened.new(@heads[stream], @resets[stream])
    @deflate[stream] = true if opened.field("sec-websocket-extensions")&.include?("permessage-deflate")
    opened
  end

  def send_frame(stream, opcode, payload = "", fin: true)
    payload = payload.b
    rsv = 0
    if @deflate[stream] && %i[text binary].include?(opcode)
      payload = self.class.deflate(payload)
      rsv = 4
    end
    bytes = WSFrameBuilder.frame(opcode, payload, fin: fin, rsv: rsv)
    @sent[0] += bytes.bytesize
    @sent[stream] += bytes.bytesize
    # DATA frames of at most SETTINGS_MAX_FRAME_SIZE's default (RFC 9113 §4.2).
    (0...bytes.bytesize).step(16_384) { |at| @h2.data(stream, bytes.byteslice(at, 16_384), end_stream: false) }
  end

  # Sends a binary message once the windows have room for it, reading the server's frames
  # meanwhile; false when no room came within wait seconds (nothing was sent).
  def send_within_window(stream, payload, wait: 1)
    size = WSFrameBuilder.frame(:binary, payload).bytesize
    pump(timeout: wait) { window(stream) >= size }
    return false if window(stream) < size

    binary(stream, payload)
    true
  end

  def text(stream, str) = send_frame(stream, :text, str)
  def binary(stream, str) = send_frame(stream, :binary, str)
  def close(stream, code = 1000) = send_frame(stream, :close, WSFrameBuilder.close_payload(code))

  # END_STREAM on the client's side.
  def end_stream(stream)
    @h2.data(stream, "", end_stream: true)
  end

  def reset(stream)
    @h2.rst_stream(stream, :cancel)
  end

  # The client stops granting stream's window (it reads nothing of it), or starts again.
  def hold(stream)
    @held[stream] = 0
  end

  def release(stream)
    owed = @held.delete(stream)
    @h2.window_update(stream, owed) if owed&.positive?
  end

  # The next whole frame on stream (its payload inflated when compressed), or nil when the
  # stream ended or was reset first, or nothing came in time.
  def read_frame(stream, timeout: @timeout)
    frame = nil
    pump(timeout: timeout) do
      frame = take_frame(stream)
      frame || @ended[stream] || @resets[stream]
    end
    frame
  end

  # Whether the server ended stream (END_STREAM) or reset it, and how: [:end] or [:reset, code].
  def stream_end(stream, timeout: @timeout)
    pump(timeout: timeout) { @ended[stream] || @resets[stream] }
    return [:reset, @resets[stream].payload.unpack1("N")] if @resets[stream]

    @ended[stream] ? [:end] : nil
  end

  # The server's GOAWAY (an Event), or nil when none came in time.
  def wait_for_goaway(timeout: @timeout)
    pump(timeout: timeout) { @goaway }
    @goaway
  end

  def self.deflate(payload)
    z = Zlib::Deflate.new(Zlib::DEFAULT_COMPRESSION, -Zlib::MAX_WBITS)
    out = z.deflate(payload, Zlib::SYNC_FLUSH)
    z.close
    out.byteslice(0, out.bytesize - 4) # RFC 7692 §7.2.1: without the trailing 00 00 ff ff
  end

  def self.inflate(payload)
    z = Zlib::Inflate.new(-Zlib::MAX_WBITS)
    out = z.inflate(payload + "\x00\x00\xff\xff".b)
    z.close
    out
  end

  private

  def take_frame(stream)
    parsed = WSFrameBuilder.parse(@bytes[stream], 0)
    return nil unless parsed

    opcode, fin, rsv, masked, payload, size = parsed
    raise "the server masked a frame" if masked

    @bytes[stream] = @bytes[stream].byteslice(size..)
    payload = self.class.inflate(payload) if rsv.anybits?(4)
    Frame.new(fin, rsv.anybits?(4), opcode, payload)
  end

  # Reads events until the block is true, the connection ends or the deadline passes.
  def pump(timeout: @timeout)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    until yield
      left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      return if left <= 0

      event = @h2.next_event(timeout: left)
      return if %i[closed timeout].include?(event.type)

      take(event)
    end
  end

  def take(event)
    case event.type
    when :headers
      @heads[event.stream] ||= event.fields
      @ended[event.stream] = true if event.end_stream?
    when :data
      @bytes[event.stream] << event.payload
      grant(event.stream, event.payload.bytesize)
      @ended[event.stream] = true if event.end_stream?
    when :rst_stream
      @resets[event.stream] = event
    when :goaway
      @goaway = event
    end
  end

  def grant(stream, bytes)
    return if bytes.zero?

    @h2.window_update(0, bytes)
    if @held.key?(stream)
      @held[stream] += bytes
    else
      @h2.window_update(stream, bytes)
    end
  end
end
