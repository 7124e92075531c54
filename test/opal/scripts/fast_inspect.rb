# frozen_string_literal: true

# up_node's faster String#inspect and Hash#inspect (opal/up/node/fast_inspect.rb) print what
# MRI prints, for strings that need no escaping and for those that do.
require "up/node/fast_inspect" if RUBY_ENGINE == "opal"

strings = ["plain", "", "a\\b", "q\"t", "x\ny", "tab\t", "\e", "#a", "#", "x\#{y}", "\#$x", "\#@x", "caf\u00e9"]
strings.each { |s| puts s.inspect }
env = { "PATH_INFO" => "/a b", "HTTP_COOKIE" => "a=1; b=\"2\"", "n" => 1, "nil" => nil, "list" => [1, "two"],
        "flag" => false, "nested" => { "k" => "v" } }
puts env.inspect, env.to_s, {}.inspect, { "bytes" => "abc".b, "q" => "\"".b }.inspect, "abc".b.inspect
shared = {}
puts({ "p" => shared, "q" => shared }.inspect)
loop = { "a" => 1 }
loop["self"] = loop
loop["list"] = [loop]
puts loop.inspect
# Arrays of plain values inspect without Opal's recursion guards; any other Array keeps them,
# and its own #inspect.
odd = [1, 2]
def odd.inspect = "odd"
row = Class.new(Array) { def inspect = "row" }.new([1])
puts({ "version" => [1, 3], "empty" => [], "mixed" => [1.5, nil, true, "q\"", "caf\u00e9"], "odd" => odd,
       "row" => row, "deep" => [[1], { "k" => [2] }, odd] }.inspect)
