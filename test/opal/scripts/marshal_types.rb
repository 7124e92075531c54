# frozen_string_literal: true

# Marshal.dump of each kind of value, printed as hex, then the value loaded back: the
# test compares these lines between MRI and Opal, so they must be the same bytes.
# Values are those Opal can hold as MRI does (no Symbol as a value, no Float without a
# fraction: on Opal those are a String and an Integer).
Point = Struct.new(:x, :y)
Named = Struct.new(:name, keyword_init: true)

class Thing
  attr_reader :a, :name

  def initialize(a, name)
    @a = a
    @name = name
  end

  def to_s = "Thing(#{a.inspect}, #{name.inspect})"
end

class Dumped
  attr_reader :data

  def initialize(data) = (@data = data)
  def marshal_dump = [@data, 'v1']
  def marshal_load(array) = (@data = array.first)
  def to_s = "Dumped(#{data.inspect})"
end

class Packed
  attr_reader :text

  def initialize(text) = (@text = text)
  def _dump(_limit) = @text
  def self._load(text) = new(text)
  def to_s = "Packed(#{text.inspect}, #{text.encoding})"
end

module Tag; end

class Words < Array; end
class Table < Hash; end
class Text < String; end

shared = [1, 'two']
cyclic = []
cyclic.push(cyclic)
with_default = Hash.new('none')
with_default['k'] = 'v'
thing = Thing.new(shared, 'n')

values = {
  'nil' => nil, 'true' => true, 'false' => false,
  'small ints' => [0, 1, -1, 122, 123, -123, -124, 255, 256, -256, -257, 65_535, 65_536, -65_537],
  'fixnum edges' => [2**30 - 1, -(2**30), 2**24, -(2**24) - 1],
  'bignums' => [2**30, -(2**30) - 1, 2**40, -(2**40), 2**52 + 3, 2**53],
  'floats' => [1.5, -2.5, 0.1, 1.0e-5, 1.0e-10, 123_456.789, 2.5e-300, 1.7e-4, 0.001, 3.14159],
  'float specials' => [Float::INFINITY, -Float::INFINITY],
  'float twice (flonum link)' => [1.5, 1.5],
  'utf-8 strings' => ['', 'abc', 'héllo wörld', "tab\tnewline\n", '日本語'],
  'binary strings' => ['abc'.b, "\xff\x00\x80".b, ''.b],
  'arrays' => [[], [1, [2, [3, []]]], [nil, true, false]],
  'same array twice (link)' => [shared, shared],
  'cyclic array' => cyclic,
  'hash' => { 'a' => 1, 'b' => [2, 'c'], 3 => nil },
  'hash with default' => with_default,
  'struct' => Point.new(1, 'y'),
  'keyword struct' => Named.new(name: 'kw'),
  'structs share symbols' => [Point.new(1, 2), Point.new(3, 4)],
  'object with ivars' => thing,
  'object twice' => [thing, thing, shared],
  'marshal_dump' => Dumped.new({ 'k' => [1.5] }),
  '_dump utf-8' => Packed.new('ünï'),
  '_dump binary' => Packed.new("\x01\xfe".b),
  'range' => [1..3, 1...3, 'a'..'c'],
  'regexp' => [/ab+c/i, /x.y/m],
  'class and module' => [String, Point, Tag],
  'subclasses of Array, Hash and String' => [Words.new([1]), Table.new.merge!('k' => 'v'), Text.new('t')],
  'session' => { 'session_id' => 'a1b2c3', 'csrf' => 'tok==', 'flash' => { 'notice' => 'Saved' }, 'count' => 3, 'user' => 'Jürgen' }
}

values.each do |label, value|
  bytes = Marshal.dump(value)
  loaded = Marshal.load(bytes)
  puts "#{label}: #{bytes.bytes.map { |b| format('%02x', b) }.join} #{bytes.encoding}"
  shown = case label
          when 'cyclic array' then loaded.first.equal?(loaded).inspect
          when '_dump binary' then [loaded.text.bytes, loaded.text.encoding].inspect
          when /object|marshal_dump|_dump/ then Array(loaded).map(&:to_s).inspect
          # Float#inspect and a binary String's inspect differ on Opal; the values do not.
          when /float/ then [loaded == value, loaded.map(&:to_f) == value].inspect
          when 'binary strings' then loaded.map { |str| [str.bytes, str.encoding] }.inspect
          when 'regexp' then loaded.map { |r| [r.source, r.options] }.inspect
          else loaded.inspect
          end
  puts "  loaded: #{shown}"
end

pair = Marshal.load(Marshal.dump([thing, thing]))
puts "object link kept: #{pair[0].equal?(pair[1])}"
puts "hash default kept: #{Marshal.load(Marshal.dump(with_default))['missing']}"
puts "string encodings: #{Marshal.load(Marshal.dump(['é', 'é'.b])).map(&:encoding).inspect}"
puts "dump to limit: #{(Marshal.dump([[[1]]], 2) rescue $!.class)}"
puts "proc: #{(Marshal.dump(proc {}) rescue $!.class)}"
puts "default proc: #{(Marshal.dump(Hash.new { 1 }) rescue $!.message)}"
puts "too short: #{(Marshal.load("\x04\x08[\x07".b) rescue $!.message)}"
puts "bad version: #{(Marshal.load("\x03\x00".b) rescue $!.class)}"
