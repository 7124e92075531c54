# frozen_string_literal: true

# HTTP/2 frames written and read by hand (RFC 9113 §4, §6), for the tests that must send what
# no well-behaved client sends: more streams than allowed, floods of resets, header lists past
# a limit. Header blocks use HPACK literals without indexing or Huffman coding (RFC 7541
# §6.2.2), which every decoder takes. Wraps a connected socket; reads fail after a deadline.
class H2Frames
  PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
  TYPES = { data: 0, headers: 1, rst_stream: 3, settings: 4, ping: 6, goaway: 7, window_update: 8, continuation: 9 }.freeze
  END_STREAM = 0x1
  END_HEADERS = 0x4
  ACK = 0x1
  SETTINGS = { max_concurrent_streams: 3, max_header_list_size: 6 }.freeze

  Frame = Struct.new(:type, :flags, :stream, :payload) do
    def type_name
      TYPES.key(type) || type
    end

    # A GOAWAY's or RST_STREAM's error code.
    def error_code
      type == TYPES[:goaway] ? payload.byteslice(4, 4).unpack1("N") : payload.unpack1("N")
    end

    # SETTINGS as { id => value }.
    def settings
      payload.unpack("nN" * (payload.bytesize / 6)).each_slice(2).to_h
    end
  end

  def initialize(socket)
    @socket = socket
    @socket.write(PREFACE)
    write_frame(:settings, 0, 0, "")
  end

  def write_frame(type, flags, stream, payload)
    @socket.write([payload.bytesize >> 8, payload.bytesize & 0xff, TYPES.fetch(type), flags, stream].pack("nCCCN") + payload)
  end

  # A GET of path as one HEADERS frame (END_HEADERS, END_STREAM unless open), with more fields.
  def get(stream, path, fields = {}, open: false)
    write_frame(:headers, END_HEADERS | (open ? 0 : END_STREAM), stream, header_block(path, fields))
  end

  def header_block(path, fields = {}, method: "GET")
    { ":method" => method, ":scheme" => "http", ":path" => path, ":authority" => "localhost" }.merge(fields)
      .map { |name, value| "\x00".b + string(name) + string(value) }.join
  end

  # The next frame, or nil when the server closed the connection.
  def read_frame(timeout: 5)
    head = read_exactly(9, timeout)
    return nil if head.nil?

    high, low, type, flags, stream = head.unpack("nCCCN")
    length = (high << 8) | low
    Frame.new(type, flags, stream & 0x7fffffff, length.zero? ? "".b : read_exactly(length, timeout))
  end

  # Frames until one matches the block (returned) or the connection ends (nil); SETTINGS
  # from the server are acknowledged on the way.
  def read_until(timeout: 5)
    loop do
      frame = read_frame(timeout: timeout)
      return nil if frame.nil?

      write_frame(:settings, ACK, 0, "") if frame.type == TYPES[:settings] && frame.flags.nobits?(ACK)
      return frame if yield(frame)
    end
  end

  private

  # RFC 7541 §5.2: a string literal, no Huffman coding, its length with a 7-bit prefix.
  def string(text)
    integer(text.bytesize, 7) + text.b
  end

  # RFC 7541 §5.1.
  def integer(value, prefix)
    max = (1 << prefix) - 1
    return [value].pack("C") if value < max

    out = [max].pack("C")
    value -= max
    while value >= 128
      out << [(value % 128) + 128].pack("C")
      value /= 128
    end
    out << [value].pack("C")
  end

  def read_exactly(count, timeout)
    out = "".b
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    while out.bytesize < count
      left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      raise "no frame from the server within #{timeout} s" if left <= 0 || !@socket.wait_readable(left)

      chunk = @socket.read_nonblock(count - out.bytesize, exception: false)
      return nil if chunk.nil?
      next if chunk == :wait_readable

      out << chunk
    end
    out
  rescue Errno::ECONNRESET
    nil
  end
end
