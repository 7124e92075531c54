# frozen_string_literal: true

require "socket"

# A deliberately small HTTP/1.1 client for tests: raw bytes out, a parsed response in, with
# the raw bytes kept for assertions on the exact wire format. Sockets it opens are closed in
# teardown.
module HTTPClient
  Response = Struct.new(:status, :reason, :headers, :body, :raw, keyword_init: true) do
    # headers: lower-case name => Array of values, in order
    def [](name)
      headers[name.downcase]&.join(", ")
    end
  end

  def connect(port = @port)
    sock = TCPSocket.new("127.0.0.1", port)
    (@sockets ||= []) << sock
    sock
  end

  def close_sockets
    (@sockets || []).each { |s| s.close unless s.closed? }
    @sockets = []
  end

  # Sends bytes on a new connection and reads one response.
  def raw_request(bytes, port: @port, head: false)
    sock = connect(port)
    sock.write(bytes)
    read_response(sock, head: head)
  end

  def get(path = "/", headers: {}, port: @port)
    lines = headers.map { |k, v| "#{k}: #{v}\r\n" }.join
    raw_request("GET #{path} HTTP/1.1\r\nHost: localhost\r\n#{lines}Connection: close\r\n\r\n", port: port)
  end

  # Reads one response from sock (nil when the server closed without a byte). Body framing
  # follows RFC 9112 §6.3; head: true for a HEAD request (no body whatever the headers say).
  def read_response(sock, head: false)
    raw = +""
    status_line = sock.gets("\r\n")
    return nil if status_line.nil?

    raw << status_line
    m = status_line.match(%r{\AHTTP/1\.[01] (\d{3}) ?(.*)\r\n\z}) or raise "bad status line #{status_line.inspect}"
    headers = {}
    while (line = sock.gets("\r\n"))
      raw << line
      break if line == "\r\n"

      name, value = line.chomp("\r\n").split(":", 2)
      (headers[name.downcase] ||= []) << value.strip
    end
    status = m[1].to_i
    body = read_body(sock, status, headers, head)
    raw << body.to_s
    Response.new(status: status, reason: m[2], headers: headers, body: body, raw: raw)
  end

  # True when the server closed the connection (EOF or reset) within timeout seconds; false
  # when it stayed silent that long, or sent more bytes.
  def closed_by_server?(sock, timeout: 5)
    return false unless sock.wait_readable(timeout)

    sock.read_nonblock(1, exception: false).nil?
  rescue Errno::ECONNRESET
    true
  end

  private

  def read_body(sock, status, headers, head)
    return "" if head || status < 200 || status == 204 || status == 304

    if headers.fetch("transfer-encoding", []).any? { |v| v.downcase.include?("chunked") }
      read_chunked(sock)
    elsif (length = headers["content-length"]&.first)
      sock.read(Integer(length)) || ""
    else
      sock.read || ""
    end
  end

  def read_chunked(sock)
    body = +""
    loop do
      size = Integer(sock.gets("\r\n").chomp("\r\n").split(";").first, 16)
      if size.zero?
        sock.gets("\r\n")
        return body
      end
      body << sock.read(size)
      sock.read(2)
    end
  end
end
