# frozen_string_literal: true

require "openssl"
require_relative "hpack_encoder"

# HTTP/2 frames written and read by hand (RFC 9113 §4, §6), for the tests that must send what
# no well-behaved client sends: more streams than allowed, floods of resets, header lists past
# a limit. Header blocks are HpackEncoder's: literals without indexing or Huffman coding
# (RFC 7541 §6.2.2), which every decoder takes. Wraps a connected socket (TCP, or TLS that
# chose h2); reads fail after a deadline.
class H2Frames
  PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
  TYPES = { data: 0, headers: 1, priority: 2, rst_stream: 3, settings: 4, push_promise: 5, ping: 6, goaway: 7,
            window_update: 8, continuation: 9 }.freeze
  END_STREAM = 0x1
  ACK = 0x1
  END_HEADERS = 0x4
  PADDED = 0x8
  PRIORITY = 0x20
  SETTINGS = { header_table_size: 1, enable_push: 2, max_concurrent_streams: 3, initial_window_size: 4,
               max_frame_size: 5, max_header_list_size: 6 }.freeze

  # No frame came within the deadline.
  class Timeout < StandardError; end

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

  # settings: the client's first SETTINGS, { name of SETTINGS => value } or pairs; greet:
  # false sends neither the preface nor SETTINGS.
  def initialize(socket, settings: {}, greet: true)
    @socket = socket
    return unless greet

    @socket.write(PREFACE)
    write_frame(:settings, 0, 0, self.class.settings_payload(settings))
  end

  def self.settings_payload(settings)
    settings.map { |name, value| [SETTINGS.fetch(name) { name }, value].pack("nN") }.join
  end

  # type: a name of TYPES or a number (a type no one defined); stream may have the reserved
  # bit set; length: the length the header says, when it must lie.
  def write_frame(type, flags, stream, payload, length: payload.bytesize)
    type = TYPES.fetch(type) unless type.is_a?(Integer)
    @socket.write([length >> 16, length & 0xffff, type, flags, stream].pack("CnCCN") + payload.b)
  end

  # A GET of path as one HEADERS frame (END_HEADERS, END_STREAM unless open), with more fields.
  def get(stream, path, fields = {}, open: false)
    write_frame(:headers, END_HEADERS | (open ? 0 : END_STREAM), stream, header_block(path, fields))
  end

  def header_block(path, fields = {}, method: "GET")
    HpackEncoder.new.encode({ ":method" => method, ":scheme" => "http", ":path" => path, ":authority" => "localhost" }.merge(fields))
  end

  # The next frame, or nil when the server closed the connection.
  def read_frame(timeout: 5)
    head = read_exactly(9, timeout)
    return nil if head.nil?

    high, low, type, flags, stream = head.unpack("CnCCN")
    length = (high << 16) | low
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

  def read_exactly(count, timeout)
    out = "".b
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    while out.bytesize < count
      left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      raise Timeout, "no frame from the server within #{timeout} s" if left <= 0 || !@socket.wait_readable(left)

      chunk = @socket.read_nonblock(count - out.bytesize, exception: false)
      return nil if chunk.nil?
      next if chunk == :wait_readable

      out << chunk
    end
    out
  rescue Errno::ECONNRESET, OpenSSL::SSL::SSLError, IOError
    nil # closed: abruptly, or by a TLS alert
  end
end
