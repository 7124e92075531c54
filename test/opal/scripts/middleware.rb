# frozen_string_literal: true

# Rack's common middleware, each driven through Rack::MockRequest and printed.
require "rack"
require "rack/mock_request"
require "stringio"
require "zlib"

def show(label, res)
  headers = res.headers.to_h.reject { |k, _| %w[date last-modified x-runtime].include?(k) }
  p [label, res.status, headers, res.body]
end

text = ->(body, extra = {}) { ->(_env) { [200, { "content-type" => "text/plain" }.merge(extra), [body]] } }
hello = text.call("hello world")

show "content_length", Rack::MockRequest.new(Rack::ContentLength.new(hello)).get("/")
show "content_type", Rack::MockRequest.new(Rack::ContentType.new(->(_e) { [200, {}, ["x"]] }, "text/html")).get("/")
show "head", Rack::MockRequest.new(Rack::Head.new(hello)).request("HEAD", "/")

override = Rack::MethodOverride.new(->(env) { [200, {}, [env["REQUEST_METHOD"], env["rack.methodoverride.original_method"].to_s]] })
show "method_override", Rack::MockRequest.new(override).post("/", params: { "_method" => "DELETE" })
show "method_override_header", Rack::MockRequest.new(override).post("/", "HTTP_X_HTTP_METHOD_OVERRIDE" => "PATCH")

etag = Rack::ETag.new(->(_e) { [200, { "content-type" => "text/plain" }, ["etag me"]] })
show "etag", Rack::MockRequest.new(etag).get("/")
cond = Rack::ConditionalGet.new(etag)
tag = Rack::MockRequest.new(etag).get("/")["etag"]
show "conditional_get", Rack::MockRequest.new(cond).get("/", "HTTP_IF_NONE_MATCH" => tag)

big = "compress me " * 100
deflater = Rack::Deflater.new(->(_e) { [200, { "content-type" => "text/plain" }, [big[0, 600], big[600..]]] })
res = Rack::MockRequest.new(deflater).get("/", "HTTP_ACCEPT_ENCODING" => "gzip")
gz = res.body.b
p ["deflater", res.status, res["content-encoding"], res["vary"], gz.bytesize < big.bytesize, gz.bytes[0, 3],
   Zlib.gunzip(gz) == big]
res = Rack::MockRequest.new(Rack::Deflater.new(hello)).get("/", "HTTP_ACCEPT_ENCODING" => "identity")
show "deflater_identity", res
p Zlib.gunzip(Zlib.gzip("round trip")), Zlib::Inflate.inflate(Zlib::Deflate.deflate("inflate"))

log = StringIO.new
logged = Rack::CommonLogger.new(hello, log)
Rack::MockRequest.new(logged).get("/path?q=1", "REMOTE_ADDR" => "192.0.2.1")
p log.string.sub(/\[[^\]]+\]/, "[TIME]").sub(/ [\d.]+\n\z/, " DURATION\n")

boom = ->(_e) { raise ArgumentError, "kaboom" }
res = Rack::MockRequest.new(Rack::ShowExceptions.new(boom)).get("/", "HTTP_ACCEPT" => "text/html")
p ["show_exceptions_html", res.status, res["content-type"], res.body.include?("kaboom"), res.body.include?("ArgumentError")]
res = Rack::MockRequest.new(Rack::ShowExceptions.new(boom)).get("/", "HTTP_ACCEPT" => "text/plain")
p ["show_exceptions_text", res.status, res["content-type"], res.body.lines.first]

show "show_status", Rack::MockRequest.new(Rack::ShowStatus.new(->(_e) { [404, {}, []] })).get("/")

cascade = Rack::Cascade.new([->(_e) { [404, {}, ["no"]] }, ->(_e) { [200, {}, ["second"]] }])
show "cascade", Rack::MockRequest.new(cascade).get("/")
show "runtime", Rack::MockRequest.new(Rack::Runtime.new(hello)).get("/").tap { |r| p r["x-runtime"].to_s.match?(/\A\d+\.\d+\z/) }

events = []
handler = Object.new
%i[on_start on_commit on_send on_finish].each { |m| handler.define_singleton_method(m) { |*| events << m.to_s } }
Rack::MockRequest.new(Rack::Events.new(hello, [handler])).get("/").body
p events

proxy_closed = []
body = Rack::BodyProxy.new(["a", "b"]) { proxy_closed << :closed }
p body.to_a, body.respond_to?(:each)
body.close
p proxy_closed.length, body.closed?

static = Rack::Static.new(->(_e) { [404, {}, ["app"]] }, urls: ["/public"], root: "fixtures",
                          header_rules: [[:all, { "cache-control" => "public, max-age=60" }]])
show "static", Rack::MockRequest.new(static).get("/public/hello.txt")
show "static_css", Rack::MockRequest.new(static).get("/public/site.css")
show "static_missing", Rack::MockRequest.new(static).get("/public/none.txt")
show "static_passthrough", Rack::MockRequest.new(static).get("/other")
files = Rack::Files.new("fixtures")
show "files", Rack::MockRequest.new(files).get("/public/hello.txt")
show "files_range", Rack::MockRequest.new(files).get("/public/hello.txt", "HTTP_RANGE" => "bytes=0-4")
show "files_head", Rack::MockRequest.new(files).request("HEAD", "/public/hello.txt")
show "files_traversal", Rack::MockRequest.new(files).get("/../middleware.rb")
show "files_405", Rack::MockRequest.new(files).post("/public/hello.txt")

show "recursive", Rack::MockRequest.new(Rack::Recursive.new(->(env) {
  if env["PATH_INFO"] == "/inner"
    [200, {}, ["inner"]]
  else
    [200, {}, ["outer+", env["rack.recursive.include"].call(env, "/inner")[2].first]]
  end
})).get("/outer")
