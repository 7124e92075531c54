# frozen_string_literal: true

require_relative "hpack_decoder"
require_relative "hpack_huffman"

# Writes HPACK header blocks (RFC 7541) the simple way every decoder must take: each field a
# literal without indexing (§6.2.2), its name by the static table's index when it is there,
# strings Huffman-coded or not. It never adds to the server's dynamic table, so its blocks
# decode the same in any order; the pieces are public for the tests that write wrong blocks.
class HpackEncoder
  NAME_INDEX = HpackDecoder::STATIC.each_with_index.reverse_each.to_h { |(name, _), i| [name, i + 1] }.freeze

  def initialize(huffman: false)
    @huffman = huffman
  end

  # fields: a Hash or [[name, value], ...].
  def encode(fields)
    fields.map { |name, value| field(name, value) }.join
  end

  def field(name, value)
    index = NAME_INDEX[name]
    index ? self.class.integer(index, 4) + string(value) : "\x00".b + string(name) + string(value)
  end

  def string(text)
    return self.class.integer(text.bytesize, 7) + text.b unless @huffman

    coded = HpackHuffman.encode(text)
    self.class.integer(coded.bytesize, 7, 0x80) + coded
  end

  # §5.1: value with a prefix of so many bits, the bits above it set from high.
  def self.integer(value, prefix, high = 0)
    max = (1 << prefix) - 1
    return [high | value].pack("C") if value < max

    out = [high | max].pack("C")
    value -= max
    while value >= 128
      out << [(value % 128) + 128].pack("C")
      value /= 128
    end
    out << [value].pack("C")
  end
end
