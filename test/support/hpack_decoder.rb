# frozen_string_literal: true

require_relative "hpack_huffman"

# Reads HPACK header blocks (RFC 7541) as a client must read a server's: indexed fields,
# the three kinds of literals, Huffman-coded strings and the dynamic table with its size
# updates. One decoder per connection, fed every block in the order they came.
class HpackDecoder
  # Appendix A.
  STATIC = [
    [":authority", ""], [":method", "GET"], [":method", "POST"], [":path", "/"], [":path", "/index.html"],
    [":scheme", "http"], [":scheme", "https"], [":status", "200"], [":status", "204"], [":status", "206"],
    [":status", "304"], [":status", "400"], [":status", "404"], [":status", "500"], ["accept-charset", ""],
    ["accept-encoding", "gzip, deflate"], ["accept-language", ""], ["accept-ranges", ""], ["accept", ""],
    ["access-control-allow-origin", ""], ["age", ""], ["allow", ""], ["authorization", ""],
    ["cache-control", ""], ["content-disposition", ""], ["content-encoding", ""], ["content-language", ""],
    ["content-length", ""], ["content-location", ""], ["content-range", ""], ["content-type", ""],
    ["cookie", ""], ["date", ""], ["etag", ""], ["expect", ""], ["expires", ""], ["from", ""], ["host", ""],
    ["if-match", ""], ["if-modified-since", ""], ["if-none-match", ""], ["if-range", ""],
    ["if-unmodified-since", ""], ["last-modified", ""], ["link", ""], ["location", ""], ["max-forwards", ""],
    ["proxy-authenticate", ""], ["proxy-authorization", ""], ["range", ""], ["referer", ""], ["refresh", ""],
    ["retry-after", ""], ["server", ""], ["set-cookie", ""], ["strict-transport-security", ""],
    ["transfer-encoding", ""], ["user-agent", ""], ["vary", ""], ["via", ""], ["www-authenticate", ""]
  ].map(&:freeze).freeze

  class Error < StandardError; end

  def initialize(max_size: 4096)
    @max_size = max_size # SETTINGS_HEADER_TABLE_SIZE we allow the encoder
    @size = max_size
    @dynamic = []
  end

  # The block's fields as [[name, value], ...], in order.
  def decode(block)
    @block = block.b
    @at = 0
    fields = []
    while @at < @block.bytesize
      byte = @block.getbyte(@at)
      if byte >= 0x80 then fields << field_at(integer(7))
      elsif byte >= 0x40 then fields << literal(6).tap { |field| add(field) }
      elsif byte >= 0x20 then resize(integer(5))
      else fields << literal(4)
      end
    end
    fields
  end

  private

  def field_at(index)
    raise Error, "index 0" if index.zero?
    return STATIC[index - 1] if index <= STATIC.size

    @dynamic.fetch(index - STATIC.size - 1) { raise Error, "index #{index} past the tables" }
  end

  # §6.2: a name by index (prefix bits) or as a string, then the value.
  def literal(prefix)
    index = integer(prefix)
    name = index.zero? ? string : field_at(index)[0]
    [name, string]
  end

  def add(field)
    @dynamic.unshift(field)
    evict
  end

  def resize(size)
    raise Error, "table size #{size} above #{@max_size}" if size > @max_size

    @size = size
    evict
  end

  # §4.4: an entry's size is its name's and value's lengths and 32.
  def evict
    @dynamic.pop while @dynamic.sum { |name, value| name.bytesize + value.bytesize + 32 } > @size
  end

  # §5.2.
  def string
    huffman = next_byte.anybits?(0x80)
    @at -= 1
    length = integer(7)
    raise Error, "string past the block" if @at + length > @block.bytesize

    bytes = @block.byteslice(@at, length)
    @at += length
    huffman ? HpackHuffman.decode(bytes) : bytes
  rescue HpackHuffman::Error => e
    raise Error, e.message
  end

  # §5.1.
  def integer(prefix)
    max = (1 << prefix) - 1
    value = next_byte & max
    return value if value < max

    shift = 0
    loop do
      byte = next_byte
      value += (byte & 0x7f) << shift
      shift += 7
      raise Error, "integer too long" if shift > 28
      return value if byte < 0x80
    end
  end

  def next_byte
    raise Error, "block ends inside a field" if @at >= @block.bytesize

    @block.getbyte(@at).tap { @at += 1 }
  end
end
