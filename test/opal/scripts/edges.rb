# frozen_string_literal: true

# Corners where Opal differs most from MRI: dates, limits, input reading through Lint,
# binary request bodies, and gzip headers.
require "rack"
require "rack/mock_request"
require "rack/lint"
require "zlib"

modified = "Wed, 21 Oct 2015 07:28:00 GMT"
page = ->(_e) { [200, { "content-type" => "text/plain", "last-modified" => modified }, ["page"]] }
cond = Rack::ConditionalGet.new(page)
[["HTTP_IF_MODIFIED_SINCE", modified], ["HTTP_IF_MODIFIED_SINCE", "Tue, 20 Oct 2015 07:28:00 GMT"],
 ["HTTP_IF_MODIFIED_SINCE", "garbage"]].each do |k, v|
  res = Rack::MockRequest.new(cond).get("/", k => v)
  p ["conditional_get", v, res.status, res.body]
end
p Time.httpdate(modified).to_i, Time.at(1445412480).httpdate

res = Rack::MockRequest.new(Rack::Deflater.new(page)).get("/", "HTTP_ACCEPT_ENCODING" => "gzip")
gz = res.body.b
p ["gzip mtime", gz.bytes[4, 4], Zlib.gunzip(gz)]

qp = Rack::QueryParser.make_default(4)
begin
  qp.parse_nested_query("a[b][c][d][e]=1")
rescue => e
  p [e.class, e.is_a?(Rack::BadRequest)]
end
begin
  Rack::Utils.parse_nested_query("x=" + ("a" * 10) + "&" + (["k=v"] * 5000).join("&"))
  p :many_params_ok
rescue => e
  p e.class
end
p Rack::Utils.parse_nested_query("a[]=1&a[]=2&a[][b]=3") rescue p $!.class

reader = ->(env) do
  input = env["rack.input"]
  first = input.gets
  rest = []
  input.each { |line| rest << line }
  [200, { "content-type" => "text/plain" }, [first.to_s, "|", rest.join(",")]]
end
res = Rack::MockRequest.new(Rack::Lint.new(reader)).post("/", input: "one\ntwo\nthree\n")
p ["lint input", res.status, res.body]

# A raw (not %-encoded) UTF-8 form body, given as bytes.
raw = "name=Jürgen&city=Zürich".bytes.pack("C*")
env = Rack::MockRequest.env_for("/", method: "POST", input: raw, "CONTENT_TYPE" => "application/x-www-form-urlencoded")
p Rack::Request.new(env).POST
p Rack::Utils.escape("Jürgen".b), Rack::Utils.unescape("J%FCrgen", Encoding::BINARY).bytes

# Raw UTF-8 bytes in a cookie and a query string, as a server hands them over (bytes).
raw_env = {
  "HTTP_COOKIE" => "name=Jürgen; city=Zürich".bytes.pack("C*"),
  "QUERY_STRING" => "q=naïve&r=%C3%A9".bytes.pack("C*"),
  "REQUEST_METHOD" => "GET",
}
req = Rack::Request.new(raw_env)
p req.cookies, req.GET

# A binary file served by Rack::Files, through ETag and Deflater, keeps its bytes.
served = Rack::MockRequest.new(Rack::ETag.new(Rack::Files.new("fixtures"))).get("/upload.bin")
p served.status, served.body.bytes == File.binread("fixtures/upload.bin").bytes, served["etag"]
zipped = Rack::MockRequest.new(Rack::Deflater.new(Rack::Files.new("fixtures"))).get("/upload.bin", "HTTP_ACCEPT_ENCODING" => "gzip")
p zipped["content-encoding"], Zlib.gunzip(zipped.body.b).bytes == File.binread("fixtures/upload.bin").bytes
