# frozen_string_literal: true

# Strings changed in place, as Mustermann, Sinatra and Tilt change them: through a local,
# an instance, global or class variable, an attribute or a Hash entry, with MRI's return
# values; Arrays and other receivers of the same methods are unaffected.
buf = String.new
buf << "a" << "b"
buf.concat("c", "d")
buf.prepend(">")
buf.insert(1, "_")
buf.insert(-1, "$")
p buf, buf.length, buf.frozen?
greek = +"alpha "
greek << 955
p greek

# One p per change: in MRI a bang method returns the string itself, so printing several
# returns at once would show the last state for each.
s = +"  Hello, World  "
[-> { s.strip! }, -> { s.strip! }, -> { s.sub!("World", "Opal") }, -> { s.sub!("nope", "x") },
 -> { s.gsub!(/o/) { |m| m.upcase } }, -> { s.gsub!("z", "y") }, -> { s.upcase! }, -> { s.downcase! },
 -> { s.downcase! }, -> { s.capitalize! }, -> { s.swapcase! }, -> { s.tr!("lo", "01") }, -> { s.delete!("1") },
 -> { s.squeeze! }, -> { s.squeeze! }, -> { s.reverse! }].each { |change| p [change.call, s] }
t = +"line\n"
[-> { t.chomp! }, -> { t.chomp! }, -> { t.chop! }, -> { t.succ! }, -> { t.next! }].each { |change| p [change.call, t] }
u = +"0123456789"
[-> { u.slice!(0) }, -> { u.slice!(1, 2) }, -> { u.slice!(2..3) }, -> { u.slice!(/8/) }, -> { u.slice!("5") },
 -> { u.slice!(99) }, -> { u.slice!(-1) }, -> { u.slice!(0...1) }].each { |change| p [change.call, u] }
p [u.replace("new"), u]
p [u.clear, u, u.empty?]

class Holder
  attr_accessor :text

  @@log = String.new

  def initialize
    @out = String.new
    @text = +"t"
  end

  def render(parts)
    parts.each { |part| @out << part << "," }
    self.text << "+"
    text.concat("!")
    @@log << "rendered"
    [@out, @text, @@log]
  end
end
p Holder.new.render(%w[x y])

$journal = +"j"
$journal << "ournal"
p $journal

headers = { "vary" => +"accept" }
headers["vary"] << ", origin"
p headers

list = []
list << 1 << 2
list.concat([3])
list.insert(0, 0)
p list
p list.slice!(1), list
p list.clear, list.replace([9])

def bracket(open, close)
  result = String.new
  result << open << "inner" * 2 << close
  result
end
p bracket("<", ">")

p (+"ab").upcase!, "done".dup << "!", "x".dup.concat("y", "z")
bytes = String.new(encoding: Encoding::BINARY)
bytes << [0xff, 0x00].pack("C*")
bytes << "A"
p bytes.bytes, bytes.encoding.to_s

# A String made to change (String.new, dup, +@) changes in place: every reference sees it,
# as Sinatra's `uri = [host = String.new]; host << "http://"` needs.
parts = [host = String.new]
host << "http://" << "localhost"
parts << "/path"
p parts.join, host
alias_of = buf2 = +"a"
buf2 << "b"
alias_of.upcase!
p buf2, alias_of.equal?(buf2), buf2.frozen?
list_of = [String.new]
list_of.last << "x"
p list_of
frozen = String.new("ice").freeze
begin
  frozen << "!"
rescue FrozenError => e
  p e.class
end

# force_encoding changes a String made to change in place (Roda's sessions:
# `hmac_secret = secret = secret.dup.force_encoding("BINARY")`, then `secret.slice!(0, 32)`).
source = "s\u00e9cret-0123456789"
hmac = key = source.dup.force_encoding("BINARY")
cipher = key.slice!(0, 4)
p hmac.equal?(key), hmac.bytesize, cipher.bytes, key.encoding, source.encoding

# Appends of bytes to bytes, of ASCII text to bytes and of text to text (the joins that need
# no Buffer) keep the bytes and the encoding MRI gives them, through a variable and on a
# String made to change; bytes with text that is not ASCII still join as bytes.
packed = "\x01".b
packed << [0xfe, 0x80].pack("C*") << "ok"
p packed.bytes, packed.encoding.to_s
growing = String.new(encoding: Encoding::BINARY)
3.times { |i| growing << [0xf0 + i].pack("C") << "-" }
p growing.bytes, growing.encoding.to_s
text = +"caf"
text << "\u00e9" << " cr\u00e8me"
p text, text.bytesize, text.encoding.to_s
ascii_bytes = "ab".b
ascii_bytes << "\u00e9".b
p ascii_bytes.bytes, ascii_bytes.encoding.to_s
