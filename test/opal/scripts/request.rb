# frozen_string_literal: true

# Rack::Request over envs made by Rack::MockRequest: params, cookies, host, port, scheme,
# forwarded headers, client IP, and form bodies.
require "rack"
require "rack/mock_request"

def req(uri, **opts)
  Rack::Request.new(Rack::MockRequest.env_for(uri, **opts))
end

r = req("http://example.org:8080/path/to?a=1&b[]=2&b[]=3&c[d]=x%20y",
        "HTTP_COOKIE" => "sid=abc; theme=dark%20mode", "HTTP_ACCEPT_ENCODING" => "gzip, deflate;q=0.5")
p r.GET, r.params, r.cookies
p r.host, r.port, r.host_with_port, r.authority, r.scheme, r.ssl?, r.base_url, r.url, r.fullpath
p r.path, r.path_info, r.script_name, r.query_string, r.request_method, r.get?, r.post?
p r.accept_encoding.map { |e, q| [e, format("%.1f", q)] }
p r.user_agent, r.referer, r.xhr?, r.content_length, r.content_type, r.media_type

r = req("/form", method: "POST", input: "name=J%C3%BCrgen&tags[]=a&tags[]=b&empty=",
                 "CONTENT_TYPE" => "application/x-www-form-urlencoded; charset=UTF-8")
p r.POST, r.params, r.form_data?, r.media_type, r.media_type_params, r.content_charset
p r.body.read
r = req("/json", method: "POST", input: '{"a":1}', "CONTENT_TYPE" => "application/json")
p r.POST, r.form_data?, r.parseable_data?
r = req("/q?x=1", method: "POST", params: { "y" => "2", "z" => ["3", "4"] })
p r.params, r.env["CONTENT_TYPE"], r.content_length

r = req("https://secure.test/", "HTTP_X_FORWARDED_FOR" => "10.0.0.1, 203.0.113.9", "REMOTE_ADDR" => "127.0.0.1")
p r.ip, r.scheme, r.port, r.ssl?, r.forwarded_for

r = req("/", "HTTP_HOST" => "[::1]:9292")
p r.host, r.hostname, r.port, r.host_with_port, r.server_name

r = req("/", "HTTP_X_FORWARDED_HOST" => "front.test:4443", "HTTP_X_FORWARDED_PROTO" => "https",
             "REMOTE_ADDR" => "10.1.2.3")
p r.host, r.port, r.scheme, r.forwarded_authority, r.ip

r = req("/", "HTTP_FORWARDED" => "for=192.0.2.43;proto=https;host=fwd.test", "REMOTE_ADDR" => "127.0.0.1")
Rack::Request.forwarded_priority = [:forwarded, :x_forwarded]
p r.host, r.scheme, r.ip
Rack::Request.forwarded_priority = [:forwarded, :x_forwarded]

r = req("/", "REMOTE_ADDR" => "8.8.8.8, 10.0.0.1")
p r.ip
p Rack::Request.ip_filter.call("192.168.1.1"), Rack::Request.ip_filter.call("8.8.8.8"),
  Rack::Request.ip_filter.call("::1"), Rack::Request.ip_filter.call("fd00::1"),
  Rack::Request.ip_filter.call("unix:/tmp/sock")

r = req("/x?a=1")
r.update_param("b", "2")
r.delete_param("a")
p r.params, r.query_string
r.set_header("rack.custom", 1)
p r.get_header("rack.custom"), r.has_header?("rack.custom"), r.fetch_header("nope") { "dflt" }
p r.session.class rescue p $!.class
