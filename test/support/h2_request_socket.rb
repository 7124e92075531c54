# frozen_string_literal: true

require "socket"
require_relative "h2_case_client"
require_relative "http_client"
require_relative "tls_client_socket"

# One HTTP/2 connection that a test written for HTTP/1.1 writes its requests to as HTTP/1.1
# bytes (the conformance suite with UP_H2=1, test/conformance/helper.rb): each request is a
# stream of its own, its head sent as HEADERS once whole, the request line and Host as the
# pseudo-header fields (RFC 9113 §8.3.1; an absolute-form target gives :scheme and :authority),
# the fields in lower case but those HTTP/2 forbids (§8.2.2: Connection and the fields it
# names), then its body as DATA frames as its bytes are written, within the server's windows (a
# chunked body decoded a chunk at a time, its trailers a trailing HEADERS).
# #read_response gives the streams' responses in the order their requests were written, as
# HTTPClient::Response, an interim (1xx) head as a response of its own.
#
# What has no HTTP/2 form (another version than HTTP/1.1, a request line or field HTTP/1.1
# itself would refuse) raises NoHTTP2Form: the tests made of such bytes are HTTP/1 by nature.
class H2RequestSocket
  # The request has no HTTP/2 form.
  class NoHTTP2Form < StandardError; end

  # Fields HTTP/2 forbids in a request (§8.2.2); TE is allowed as "trailers" only.
  CONNECTION_FIELDS = %w[connection keep-alive proxy-connection transfer-encoding upgrade].freeze
  DEFAULT_WINDOW = 65_535

  # A request's stream: the heads read and not yet given (interim ones, then the final one),
  # whether the final head came, the body and trailers, how it ended, the server's window.
  Stream = Struct.new(:id, :heads, :final, :body, :trailers, :ended, :reset, :window)

  attr_reader :alpn_protocol

  # port: the server's; context: a TLS client context (h2 by ALPN), or nil for h2c by prior
  # knowledge.
  def initialize(port, context: nil, timeout: 10)
    @socket = if context
                context.alpn_protocols = ["h2"]
                TLSClientSocket.open(port, context).tap { |ssl| @alpn_protocol = ssl.alpn_protocol }
              else
                TCPSocket.new("127.0.0.1", port)
              end
    raise "ALPN chose #{@alpn_protocol.inspect}, not h2" if context && @alpn_protocol != "h2"

    @scheme = context ? "https" : "http"
    @timeout = timeout
    # The handshake is ours, not H2CaseClient's, so that a WINDOW_UPDATE the server sends with
    # its SETTINGS counts.
    @client = H2CaseClient.new(@socket, scheme: @scheme, handshake: false, timeout: timeout)
    @client.write_raw(H2CaseClient.preface)
    @client.settings({})
    @settings = { seen: false, acked: false }
    @written = +"".b
    @sending = nil # the stream whose body is being written, and how much is left (or :chunked)
    @sending_left = nil
    @next_id = 1
    @streams = {}
    @unanswered = [] # streams whose final response #read_response has not given yet
    @window = DEFAULT_WINDOW
    @goaway = nil # the server's GOAWAY: the streams it names go on, the others are refused
    @closed = false
    pump! until @settings.values.all?
  end

  # Takes HTTP/1.1 bytes: a request's head goes out as its HEADERS once whole, its body as
  # DATA as the bytes come (a chunked body a chunk at a time).
  def write(bytes)
    @written << bytes.b
    nil while send_some
    bytes.bytesize
  end

  def close
    @socket.close unless @socket.closed?
  end

  def closed?
    @socket.closed?
  end

  # The next response, in request order: an interim head first when one came, then the final
  # response, read to its end. nil when the stream was reset or the connection ended first.
  def read_response
    stream = @unanswered.first or raise "no request awaits a response"
    pump! until stream.heads.any? || over?(stream)
    head = stream.heads.shift
    return response(head, +"".b, nil) if head && interim?(head)

    @unanswered.shift
    pump! until over?(stream)
    return nil unless head && stream.ended

    response(head, stream.body, stream.trailers)
  end

  # True when the server ended the connection (GOAWAY, or closed it) within timeout seconds.
  def ended_by_server?(timeout: 5)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    until @goaway || @closed
      left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      break unless left.positive?

      pump(left)
    end
    @goaway || @closed
  end

  private

  # Sends what the bytes written so far allow; false when they allow nothing more.
  def send_some
    return start_request if @sending.nil?
    return send_chunk if @sending_left == :chunked

    part = @written.byteslice(0, @sending_left)
    return false if part.empty?

    @written = @written.byteslice(part.bytesize..)
    @sending_left -= part.bytesize
    send_body(@sending, part, last: @sending_left.zero?)
    @sending = nil if @sending_left.zero?
    true
  end

  # A request's head, once whole: its HEADERS sent, and what its body will be noted.
  def start_request
    head_end = @written.index("\r\n\r\n") or return false
    line, *field_lines = @written.byteslice(0, head_end).split("\r\n")
    @written = @written.byteslice(head_end + 4..)
    method, target, version = line.to_s.split(" ", -1)
    raise NoHTTP2Form, "request line #{line.inspect}" unless version == "HTTP/1.1" && target && !method.empty?

    fields = field_lines.map do |field|
      name, value = field.split(":", 2)
      raise NoHTTP2Form, "field #{field.inspect}" if value.nil? || name.empty? || name.match?(/\s/)

      [name.downcase, value.strip]
    end
    chunked = fields.any? { |name, value| name == "transfer-encoding" && value.downcase.include?("chunked") }
    left = chunked ? :chunked : fields.assoc("content-length")&.last.to_i
    bodiless = left.is_a?(Integer) && left.zero?
    stream = open_stream(method, target, fields, end_stream: bodiless)
    @sending, @sending_left = stream, left unless bodiless
    true
  end

  # The next whole chunk of a chunked body as DATA; the last chunk ends the stream, with the
  # trailers as HEADERS when there are some.
  def send_chunk
    line_end = @written.index("\r\n") or return false
    size = Integer(@written.byteslice(0, line_end).split(";").first.strip, 16)
    at = line_end + 2
    return send_last_chunk(at) if size.zero?
    return false if @written.bytesize < at + size + 2

    data = @written.byteslice(at, size)
    @written = @written.byteslice(at + size + 2..)
    send_body(@sending, data, last: false)
    true
  end

  def send_last_chunk(at)
    if @written.byteslice(at, 2) == "\r\n"
      @written = @written.byteslice(at + 2..)
      send_body(@sending, "".b, last: true)
    else
      trailer_end = @written.index("\r\n\r\n", at) or return false
      trailers = @written.byteslice(at, trailer_end - at).split("\r\n").map do |field|
        name, value = field.split(":", 2)
        [name.downcase, value.strip]
      end
      @written = @written.byteslice(trailer_end + 4..)
      @client.headers(@sending.id, trailers, end_stream: true)
    end
    @sending = nil
    true
  end

  # A new stream for the request, its HEADERS sent.
  def open_stream(method, target, fields, end_stream:)
    authority = fields.assoc("host")&.last
    scheme = @scheme
    if (absolute = target.match(%r{\A(https?)://([^/?]+)(.*)\z}))
      scheme, authority, target = absolute.captures
      target = "/#{target}" unless target.start_with?("/")
    end
    pseudo = [[":method", method], [":scheme", scheme], [":path", target]]
    pseudo << [":authority", authority] if authority
    regular = fields.reject do |name, value|
      name == "host" || CONNECTION_FIELDS.include?(name) || (name == "te" && value.downcase != "trailers")
    end
    id = @next_id
    @next_id += 2
    stream = Stream.new(id, [], false, +"".b, nil, false, nil,
                        @client.server_settings.fetch(H2Frames::SETTINGS[:initial_window_size], DEFAULT_WINDOW))
    @streams[id] = stream
    @unanswered << stream
    @client.headers(id, pseudo + regular, end_stream: end_stream)
    stream
  end

  # body as DATA frames of at most the server's frame size, each sent once both windows
  # have room; the last one ends the stream when last.
  def send_body(stream, body, last:)
    return @client.data(stream.id, body, end_stream: last) if body.empty?

    frame_size = @client.server_settings.fetch(H2Frames::SETTINGS[:max_frame_size], 16_384)
    at = 0
    loop do
      pump! until [@window, stream.window].min.positive? || over?(stream)
      return if stream.reset || @closed || ![@window, stream.window].min.positive?

      size = [body.bytesize - at, frame_size, @window, stream.window].min
      part = body.byteslice(at, size)
      at += size
      @window -= size
      stream.window -= size
      @client.data(stream.id, part, end_stream: last && at == body.bytesize)
      return if at == body.bytesize
    end
  end

  def interim?(head)
    head.assoc(":status").last.start_with?("1")
  end

  # Whether nothing more will come on stream: it ended or was reset, or the connection ended,
  # or a GOAWAY refused it.
  def over?(stream)
    stream.ended || stream.reset || @closed || (@goaway && stream.id > @goaway.goaway_last_stream)
  end

  # #pump, which must bring something.
  def pump!
    pump or raise "nothing from the server within #{@timeout} s"
  end

  # Reads one event (timeout seconds at most) and files it under its stream; false when
  # nothing came.
  def pump(timeout = @timeout)
    return true if @closed

    event = @client.next_event(timeout: timeout)
    stream = @streams[event.stream] if event.stream
    return true if %i[headers data rst_stream].include?(event.type) && stream.nil? # not one of ours: no push is asked for

    case event.type
    when :headers
      stream.ended = event.end_stream?
      if stream.final
        stream.trailers = event.fields
      else
        stream.heads << event.fields
        stream.final = !interim?(event.fields)
      end
    when :data
      stream.body << event.payload
      stream.ended = event.end_stream?
      unless event.payload.empty?
        @client.window_update(0, event.payload.bytesize)
        @client.window_update(stream.id, event.payload.bytesize) unless stream.ended
      end
    when :window_update
      increment = event.payload.unpack1("N") & 0x7fffffff
      if event.stream.zero?
        @window += increment
      elsif stream
        stream.window += increment
      end
    when :rst_stream
      stream.reset = H2CaseClient::ERRORS.key(event.payload.unpack1("N")) || event.payload.unpack1("N")
    when :settings
      @settings[event.flags.anybits?(H2CaseClient::ACK) ? :acked : :seen] = true
    when :goaway
      @goaway = event
    when :closed
      @closed = true
    when :timeout
      return false
    end
    true
  end

  def response(head, body, trailers)
    headers = {}
    head.each { |name, value| (headers[name] ||= []) << value unless name.start_with?(":") }
    (trailers || []).each { |name, value| (headers[name] ||= []) << value }
    status = head.assoc(":status").last
    raw = "HTTP/2 #{status}\r\n#{head.reject { |name, _| name.start_with?(":") }.map { |n, v| "#{n}: #{v}\r\n" }.join}\r\n#{body}"
    HTTPClient::Response.new(status: Integer(status), reason: "", headers: headers, body: body, raw: raw)
  end
end
