# frozen_string_literal: true

# HPACK's Huffman code (RFC 7541 §5.2, Appendix B). The code is canonical: codes of one
# length are consecutive in symbol order and each length follows on from the shorter one, so
# the code lengths alone rebuild it. They are written here one letter a symbol, "a" for 5 bits
# up to "z" for 30, symbols 0 to 255 then EOS (256).
class HpackHuffman
  LENGTHS = <<~LETTERS.delete(" \n").bytes.map { |letter| letter - 92 }.freeze
    isxxxxxxxtzxxzxxxxxxxxzxxxxxxxxxbffhibdgffdgdbbbaaabbbbbbbcdkbhf
    ibccccccccccccccccccccccdcdioijbkabababbbaccbbbabcbaabccccckgjix
    prpprrrsrssssststtrstssssqrsrsstrqprrssqsrrtqrssqqrqsrssprrrsrrs
    vvporsruvvvwwvtuoqvwwvwtqqvvxwwwptpqrqqsrruuttvsvwvvwwwwwxwwwwwv
    z
  LETTERS
  EOS = 256

  class Error < StandardError; end

  # symbol => [code, length], and { [length, code] => symbol } for decoding.
  CODES, SYMBOLS = begin
    codes = Array.new(LENGTHS.size)
    code = -1
    previous = LENGTHS.min
    (0...LENGTHS.size).sort_by { |symbol| [LENGTHS[symbol], symbol] }.each do |symbol|
      code = (code + 1) << (LENGTHS[symbol] - previous)
      previous = LENGTHS[symbol]
      codes[symbol] = [code, LENGTHS[symbol]].freeze
    end
    [codes.freeze, codes.each_with_index.to_h { |(bits, length), symbol| [[length, bits], symbol] }.freeze]
  end

  def self.encode(text)
    bits = text.each_byte.map { |byte| CODES[byte][0].to_s(2).rjust(CODES[byte][1], "0") }.join
    bits << ("1" * (-bits.size % 8)) # padding: the EOS code's first bits (§5.2)
    [bits].pack("B*")
  end

  # Raises Error for what §5.2 says a decoder must treat as an error: EOS in the string,
  # padding longer than 7 bits, or padding that is not the most significant bits of EOS.
  def self.decode(bytes)
    out = +"".b
    code = 0
    length = 0
    bytes.unpack1("B*").each_char do |bit|
      code = (code << 1) | (bit == "1" ? 1 : 0)
      length += 1
      symbol = SYMBOLS[[length, code]]
      raise Error, "no code is longer than 30 bits" if length > 30
      next unless symbol
      raise Error, "EOS inside a string" if symbol == EOS

      out << symbol.chr
      code = 0
      length = 0
    end
    raise Error, "padding longer than 7 bits" if length > 7
    raise Error, "padding is not EOS's leading ones" unless code == (1 << length) - 1

    out
  end
end
