# frozen_string_literal: true

# Rack::Headers: a Hash with downcased keys.
require "rack"
require "rack/headers"

h = Rack::Headers.new
h["Content-Type"] = "text/plain"
h["X-Custom-Header"] = "1"
h["set-cookie"] = ["a=1", "b=2"]
p h
p h["content-type"], h["CONTENT-TYPE"], h.key?("x-custom-header"), h.include?("X-CUSTOM-HEADER")
p h.fetch("Content-Type"), h.fetch("missing", "default"), h.dig("Set-Cookie")
p h.delete("X-Custom-Header"), h.to_h
h2 = Rack::Headers["ETag" => "x", "Vary" => "Accept"]
p h2, h2.merge("vary" => "Cookie"), h.merge(h2).keys
h2.merge!("Cache-Control" => "no-cache")
p h2.keys.sort, h2.values_at("ETAG", "cache-control")
p h2.select { |k, _| k.start_with?("v") }.class
p h2.transform_values(&:upcase)
p Rack::Headers.new.tap { |x| x.store("A", 1) }.assoc("a")
