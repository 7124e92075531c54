# frozen_string_literal: true

require "base64"
require "digest/sha1"
require "openssl"
require "securerandom"
require "socket"
require_relative "ws_frame_builder"

# A WebSocket client for tests (RFC 6455), raw enough to send what a real client never would:
# frames of any opcode, flags and masking, split anywhere. It reads the server's frames and
# checks they are unmasked. Every read has a deadline, so a server that stops answering fails
# the test instead of hanging it.
class WSClient
  GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

  Frame = Struct.new(:fin, :rsv1, :opcode, :payload) do
    def close_code
      payload.bytesize >= 2 ? payload.unpack1("n") : nil
    end

    def close_reason
      payload.byteslice(2..).force_encoding(Encoding::UTF_8)
    end

    def text?
      opcode == 1
    end
  end

  OPCODES = { continuation: 0, text: 1, binary: 2, close: 8, ping: 9, pong: 10 }.freeze

  attr_reader :socket, :response_head

  # Connects and upgrades; raises unless the server answers 101 with the right accept key.
  # tls: an OpenSSL::SSL::SSLContext to speak TLS with (wss://). receive_buffer: SO_RCVBUF in
  # bytes, set before connecting (the window is agreed in the handshake), for a client that
  # should fill up after a few messages rather than the tens of megabytes Linux grows to.
  def self.open(port, path: "/", headers: {}, timeout: 5, tls: nil, receive_buffer: nil)
    client = new(port, timeout: timeout, tls: tls, receive_buffer: receive_buffer)
    client.handshake(path, headers)
    client
  end

  def initialize(port, timeout: 5, tls: nil, receive_buffer: nil)
    @socket = receive_buffer ? small_window_socket(port, receive_buffer) : TCPSocket.new("127.0.0.1", port)
    @socket = tls_connect(@socket, tls) if tls
    @timeout = timeout
    @buffer = +"".b
  end

  # Sends the upgrade request; returns [status, head] and checks the accept key on a 101.
  def handshake(path, headers = {})
    key = Base64.strict_encode64(SecureRandom.bytes(16))
    lines = { "Host" => "localhost", "Upgrade" => "websocket", "Connection" => "Upgrade",
              "Sec-WebSocket-Version" => "13", "Sec-WebSocket-Key" => key }.merge(headers)
    @socket.write("GET #{path} HTTP/1.1\r\n#{lines.compact.map { |k, v| "#{k}: #{v}\r\n" }.join}\r\n")
    @response_head = read_until("\r\n\r\n")
    status = @response_head[/\AHTTP\/1\.1 (\d{3})/, 1].to_i
    raise "no 101: #{@response_head}" unless status == 101

    accept = @response_head[/^sec-websocket-accept: (\S+)\r$/i, 1]
    expected = Base64.strict_encode64(Digest::SHA1.digest(key + GUID))
    raise "bad accept key #{accept.inspect}" unless accept == expected

    status
  end

  # One frame, masked unless masked: false.
  def send_frame(opcode, payload = "", fin: true, rsv1: false, masked: true)
    @socket.write(frame_bytes(opcode, payload, fin: fin, rsv1: rsv1, masked: masked))
  end

  def frame_bytes(opcode, payload = "", fin: true, rsv1: false, masked: true)
    payload = payload.b
    op = opcode.is_a?(Symbol) ? OPCODES.fetch(opcode) : opcode
    head = [(fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | op].pack("C")
    mask_bit = masked ? 0x80 : 0
    len = payload.bytesize
    head << if len < 126
              [mask_bit | len].pack("C")
            elsif len < 65_536
              [mask_bit | 126, len].pack("Cn")
            else
              [mask_bit | 127, len].pack("CQ>")
            end
    return head + payload unless masked

    key = SecureRandom.bytes(4)
    head + key + WSFrameBuilder.mask(payload, key)
  end

  def text(str)
    send_frame(:text, str)
  end

  def binary(str)
    send_frame(:binary, str)
  end

  def close(code = 1000, reason = "")
    send_frame(:close, code ? [code].pack("n") + reason.b : "")
  end

  # The next frame the server sends; nil when it closed the connection first.
  def read_frame
    head = read_exactly(2) or return nil
    b0, b1 = head.unpack("CC")
    raise "the server masked a frame" if (b1 & 0x80) != 0

    len = case b1 & 0x7f
          when 126 then read_exactly(2).unpack1("n")
          when 127 then read_exactly(8).unpack1("Q>")
          else b1 & 0x7f
          end
    payload = len.zero? ? +"".b : read_exactly(len)
    raise "the server closed inside a frame" if payload.nil?

    Frame.new(b0 & 0x80 != 0, b0 & 0x40 != 0, b0 & 0x0f, payload)
  end

  # The next frame other than a ping (pings are answered, as a client must).
  def read_message
    loop do
      frame = read_frame
      return frame unless frame&.opcode == 9

      send_frame(:pong, frame.payload)
    end
  end

  # Whether the server closed its side (reads until end of stream, dropping bytes).
  def closed_by_server?
    deadline = now + @timeout
    loop do
      left = deadline - now
      return false if left <= 0
      return false unless @socket.to_io.wait_readable(left)

      @socket.read_nonblock(65_536)
    end
  rescue EOFError, Errno::ECONNRESET
    true
  end

  def close_socket
    @socket.close unless @socket.closed?
  end

  private

  def small_window_socket(port, bytes)
    socket = Socket.new(:INET, :STREAM)
    socket.setsockopt(Socket::SOL_SOCKET, Socket::SO_RCVBUF, bytes)
    socket.connect(Socket.sockaddr_in(port, "127.0.0.1"))
    socket
  end

  def tls_connect(tcp, ctx)
    ssl = OpenSSL::SSL::SSLSocket.new(tcp, ctx)
    ssl.sync_close = true
    ssl.hostname = "localhost"
    ssl.connect
    ssl
  end

  def now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end


  def fill(want)
    deadline = now + @timeout
    while @buffer.bytesize < want
      left = deadline - now
      raise "no answer within #{@timeout}s" if left <= 0
      raise "no answer within #{@timeout}s" unless @socket.to_io.wait_readable(left)

      chunk = @socket.read_nonblock(65_536, exception: false)
      return false if chunk.nil?
      next if chunk == :wait_readable

      @buffer << chunk
    end
    true
  rescue EOFError, Errno::ECONNRESET
    false
  end

  def read_exactly(n)
    return nil unless fill(n)

    @buffer.slice!(0, n)
  end

  def read_until(marker)
    deadline = now + @timeout
    until (i = @buffer.index(marker))
      raise "no answer within #{@timeout}s" unless @socket.to_io.wait_readable([deadline - now, 0].max)

      @buffer << @socket.readpartial(65_536)
    end
    @buffer.slice!(0, i + marker.bytesize)
  end
end
