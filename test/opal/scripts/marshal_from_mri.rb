# frozen_string_literal: true

# Loads bytes that MRI's Marshal wrote (hex in MARSHAL_HEX, one per value, comma
# separated) and checks each against the value MRI dumped. Without MARSHAL_HEX it prints
# that hex, so MRI makes the input the test hands to Opal. The values are those Opal does
# not write itself: Symbols, Floats without a fraction, a US-ASCII String, a String MRI
# links twice, a Symbol with a non-ASCII name.
Pair = Struct.new(:left, :right)

linked = String.new('twice')
values = [
  [:symbol, :symbol, :sym],
  { name: 'Ann', role: :admin },
  :"naïve",
  [1.0, 100.0, 1.0e20, -0.0],
  'ascii'.encode('US-ASCII'),
  [linked, linked],
  Pair.new(:left, [linked]),
  2**40 + 1
]

hex = ENV.fetch('MARSHAL_HEX', nil)
unless hex
  puts values.map { |value| Marshal.dump(value).bytes.map { |b| format('%02x', b) }.join }.join(',')
  exit
end

hex.split(',').zip(values).each_with_index do |(dump, value), i|
  loaded = Marshal.load(dump.scan(/../).map { |pair| pair.to_i(16) }.pack('C*'))
  puts "#{i}: #{loaded == value}"
end
twice = Marshal.load(hex.split(',')[5].scan(/../).map { |pair| pair.to_i(16) }.pack('C*'))
puts "linked String is one object: #{twice[0].equal?(twice[1])}"
