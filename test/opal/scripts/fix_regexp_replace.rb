# frozen_string_literal: true

# What Opal's corelib builds on JavaScript's replace by a Regexp: strip and its halves,
# sub and gsub with a String, a Hash and a block (captures, $~, empty matches, characters
# beyond the BMP), Regexp.escape (a `$1` replacement underneath), a split by a String (which
# Opal escapes), format, and the header and path clean-ups Rack and Sinatra make
# on every request.
["  127.0.0.1 ", "\t\n x y \r\n", "", "   ", "a", "\u00a0a\u00a0"].each do |s|
  p [s.strip, s.lstrip, s.rstrip]
end
p "a, b ,c".gsub(/\s*,\s*/, ";"), "a-b_c".gsub(/[-_]/, "-" => "+", "_" => "*")
p "abc".gsub(//, "."), "aaa".gsub(/a*/, "x"), "a😀b".gsub(/😀/, "?")
p "x1y22".gsub(/(\d)+/) { "<#{$1}#{$~[0]}>" }, "x1y22".sub(/\d/) { |d| (d.to_i + 1).to_s }
p "hello world".sub(/o/, "0"), "hello world".gsub("o", "0"), "a.b*c".gsub(".", "!")
p Regexp.escape("a.b*c?(d)[e]{f}|g^h$i\\j k\n"), "Content-Type".downcase.tr("-", "_")
p "/path//to///x".gsub(%r{/+}, "/"), "%20a+b".gsub("+", " ").capitalize
p "a.b c".split("."), "x+y".split("+"), format("%05.1f|%-4s|%x", 3.14159, "ab", 255)
