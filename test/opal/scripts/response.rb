# frozen_string_literal: true

# Rack::Response: status, headers, body writing, cookies, redirects, finish.
require "rack"
require "rack/response"

def show(res)
  status, headers, body = res.finish
  parts = []
  body.each { |x| parts << x }
  body.close if body.respond_to?(:close)
  p [status, headers.to_h, parts]
end

r = Rack::Response.new("hi", 201, { "X-A" => "b" })
r.write(" there")
r.set_cookie("a", { value: "1", path: "/", httponly: true })
r.set_cookie("b", "2")
r.delete_cookie("c", path: "/x")
show(r)

r = Rack::Response.new
r.redirect("/elsewhere", 303)
show(r)

r = Rack::Response.new
r.content_type = "application/json"
r.cache_control = "no-store"
r.etag = "W/\"1\""
r["Vary"] = "Accept"
r.add_header("vary", "Cookie")
r.add_header("x-list", "a")
r.add_header("x-list", "b")
r.write('{"a":1}')
p r.content_type, r.media_type, r.content_length, r.ok?, r.successful?, r.not_found?
show(r)

r = Rack::Response.new(nil, 204)
show(r)

r = Rack::Response.new { |res| res.status = 404; res.write("missing") }
p r.not_found?, r.client_error?
show(r)

r = Rack::Response[200, { "content-type" => "text/plain" }, ["a", "b"]]
show(r)
p Rack::Response.new.tap { |x| x.write("abc") }.length
