# frozen_string_literal: true

# "#{a}#{b}" with a part that holds bytes gives bytes, as on MRI (rack-session builds its
# cookie's plaintext so); text and other values interpolate as before.
pad = [2].pack("v")
random = [0xfe, 0x80].pack("C*")
json = %({"name":"J\u00fcrgen"})
payload = "#{pad}#{random}#{json.dup.force_encoding(Encoding::BINARY)}"
p payload.encoding, payload.bytesize, payload.bytes.first(6)
text = "a#{1}b#{nil}c#{[2, "x"]}d#{1.5}e"
p text, text.encoding, "#{json}!".bytesize, "#{'plain'}"
Point = Struct.new(:x, :y)
class Quiet
  def to_s = "quiet"
end
p "#{{ "k" => 1 }} #{Point.new(1, 2)} #{Quiet.new} #{true}#{:sym}"
