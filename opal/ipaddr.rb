# frozen_string_literal: true

# IPAddr, which Opal's stdlib lacks: Sinatra and rack-protection require it, and in
# development Sinatra allows every IP host with IPAddr.new("0.0.0.0/0") and
# IPAddr.new("::/0"). IPv4 and IPv6 addresses and networks (a prefix length or a mask),
# include?, comparison, the text forms of MRI's ipaddr. An address is kept as its bytes
# (4 or 16), since a 128-bit number does not fit an Opal Integer.
class IPAddr
  class Error < ArgumentError; end
  class InvalidAddressError < Error; end
  class AddressFamilyError < Error; end
  class InvalidPrefixError < InvalidAddressError; end

  AF_INET = 2
  AF_INET6 = 10
  IN4 = /\A(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\z/

  attr_reader :family

  def initialize(addr = '::', family = nil)
    text, prefix = addr.to_s.split('/', 2)
    text, @zone = text.to_s.split('%', 2)
    @bytes = parse(text)
    raise InvalidAddressError, "invalid address: #{addr}" unless @bytes
    raise AddressFamilyError, 'address family mismatch' if family && family != self.family

    @mask = full_mask
    apply_mask(prefix) if prefix
  end

  def self.__from_bytes(bytes, mask)
    allocate.tap { |ip| ip.__set(bytes, mask) }
  end

  def __set(bytes, mask)
    @bytes = bytes
    @mask = mask
  end

  def __bytes
    @bytes
  end

  def family
    @bytes.size == 4 ? AF_INET : AF_INET6
  end

  def ipv4?
    @bytes.size == 4
  end

  def ipv6?
    @bytes.size == 16
  end

  def ipv4_mapped?
    ipv6? && @bytes[0, 10].all?(&:zero?) && @bytes[10] == 255 && @bytes[11] == 255
  end

  def loopback?
    ipv4? ? @bytes[0] == 127 : @bytes == [0] * 15 + [1]
  end

  def private?
    if ipv4?
      @bytes[0] == 10 || (@bytes[0] == 172 && (16..31).cover?(@bytes[1])) || (@bytes[0] == 192 && @bytes[1] == 168)
    else
      @bytes[0] & 0xfe == 0xfc
    end
  end

  def include?(other)
    other = coerce(other)
    return false unless other.family == family

    @bytes.each_index.all? { |i| @bytes[i] & @mask[i] == other.__bytes[i] & @mask[i] }
  end
  alias === include?

  def ==(other)
    other = coerce(other)
    other.family == family && other.__bytes == @bytes
  rescue InvalidAddressError
    false
  end

  def <=>(other)
    other = coerce(other)
    return nil unless other.family == family

    @bytes <=> other.__bytes
  rescue InvalidAddressError
    nil
  end
  include Comparable

  def eql?(other)
    other.is_a?(IPAddr) && other.family == family && other.__bytes == @bytes
  end

  def hash
    [family, @bytes].hash
  end

  def to_i
    raise NotImplementedError, 'IPAddr#to_i of an IPv6 address does not fit an Opal Integer' if ipv6?

    @bytes.reduce(0) { |sum, byte| sum * 256 + byte }
  end

  def hton
    @bytes.pack('C*')
  end

  def mask(prefixlen)
    IPAddr.__from_bytes(@bytes, @mask).tap { |ip| ip.__apply_mask(prefixlen.to_s) }
  end

  def prefix
    @mask.sum { |byte| byte.to_s(2).count('1') }
  end

  def to_s
    text = ipv4? ? @bytes.join('.') : compressed
    @zone ? "#{text}%#{@zone}" : text
  end

  def to_string
    ipv4? ? @bytes.join('.') : full(@bytes)
  end

  def inspect
    kind = ipv4? ? 'IPv4' : 'IPv6'
    mask = ipv4? ? @mask.join('.') : full(@mask)
    "#<IPAddr: #{kind}:#{to_string}#{"%#{@zone}" if @zone}/#{mask}>"
  end

  def __apply_mask(prefix)
    apply_mask(prefix)
  end

  private

  def coerce(other)
    other.is_a?(IPAddr) ? other : IPAddr.new(other.to_s)
  end

  def full_mask
    [255] * @bytes.size
  end

  def apply_mask(prefix)
    bits = if prefix.match?(/\A\d+\z/)
             prefix.to_i
           else
             mask = parse(prefix)
             raise InvalidPrefixError, "invalid mask #{prefix}" unless mask && mask.size == @bytes.size

             mask.sum { |byte| byte.to_s(2).count('1') }
           end
    raise InvalidPrefixError, "invalid length #{prefix}" if bits > @bytes.size * 8

    @mask = @bytes.each_index.map do |i|
      left = (bits - i * 8).clamp(0, 8)
      (0xff << (8 - left)) & 0xff
    end
    @bytes = @bytes.each_index.map { |i| @bytes[i] & @mask[i] }
  end

  def parse(text)
    return nil if text.nil?
    return parse_v4(text) if text.include?('.') && !text.include?(':')

    parse_v6(text) if text.include?(':')
  end

  def parse_v4(text)
    parts = text.match(IN4)&.captures&.map(&:to_i)
    parts if parts && parts.all? { |part| part < 256 }
  end

  def parse_v6(text)
    head, tail, extra = text.split('::', -1)
    return nil if extra

    groups = ->(part) { part.nil? || part.empty? ? [] : part.split(':', -1) }
    left = groups.call(head)
    right = groups.call(tail)
    v4 = []
    last = right.empty? ? left : right
    if last.last&.include?('.')
      v4 = parse_v4(last.pop)
      return nil unless v4
    end
    words = [left, right].flatten
    return nil unless words.all? { |word| word.match?(/\A[0-9a-fA-F]{1,4}\z/) }

    missing = 8 - words.size - v4.size / 2
    return nil if tail.nil? ? missing != 0 : missing < 1

    values = left.map(&:hex) + [0] * (tail.nil? ? 0 : missing) + right.map(&:hex)
    values.flat_map { |word| [word >> 8, word & 0xff] } + v4
  end

  def words(bytes)
    bytes.each_slice(2).map { |high, low| high * 256 + low }
  end

  def full(bytes)
    words(bytes).map { |word| word.to_s(16).rjust(4, '0') }.join(':')
  end

  # RFC 5952's text: the longest run of two or more zero groups as "::", and an
  # IPv4-mapped address with its IPv4 part, as MRI writes them.
  def compressed
    return "::ffff:#{@bytes[12, 4].join('.')}" if ipv4_mapped?

    list = words(@bytes).map { |word| word.to_s(16) }
    best = nil
    start = nil
    (list + ['end']).each_with_index do |word, i|
      if word == '0'
        start ||= i
      elsif start
        best = [start, i - start] if i - start > 1 && (best.nil? || i - start > best[1])
        start = nil
      end
    end
    return list.join(':') unless best

    "#{list[0, best[0]].join(':')}::#{list[(best[0] + best[1])..].join(':')}"
  end
end
