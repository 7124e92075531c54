# frozen_string_literal: true

# Rack::Utils query parsing, building and escaping; prints one result per line.
require "rack"
require "rack/utils"

U = Rack::Utils

[
  "a=1&b=2",
  "a=1&a=2",
  "a[]=1&a[]=2&b[c]=3&b[d][]=4",
  "x[y][z]=1&x[y][w]=2",
  "k=a+b%20c%2Bd&e=%C3%A9t%C3%A9&z=%E2%9C%93",
  "empty=&novalue&=nokey",
  "a=1;b=2",
  "semi=%3B&amp=%26&eq=%3D",
  "arr[][a]=1&arr[][b]=2&arr[][a]=3",
].each { |q| p [q, U.parse_nested_query(q)] }

p U.parse_query("a=1&a=2&b=3")
p U.parse_query("a=1;b=2", ";")

begin
  U.parse_nested_query("a=%ZZ")
rescue => e
  p [e.class, e.message]
end

begin
  U.parse_nested_query("a[]=1&a[b]=2")
rescue => e
  p [e.class, e.message]
end

p U.build_query("a" => "1", "b" => ["2", "3"], "c" => nil, "d é" => "x&y")
p U.build_nested_query("a" => { "b" => ["1", "2"], "c" => { "d" => "x y" } }, "e" => nil, "f" => "é")
p U.parse_nested_query(U.build_nested_query("a" => { "b" => ["1", "2"], "c" => { "d" => "x y" } }))

["a b", "a+b", "é/ü?", "*-._~!'()", "100%", "\u2713 check", "tab\tnl\n"].each do |s|
  p [s, U.escape(s), U.unescape(U.escape(s)), U.escape_path(s), U.unescape_path(U.escape_path(s))]
end
p U.unescape("%E2%9C%93+x")
p U.unescape_path("/a%20b/%E2%9C%93+x")
p U.escape_html(%(<script>alert("x") & 'y'</script>))
p U.escape_cookie_key("a b;c") rescue p $!.class
