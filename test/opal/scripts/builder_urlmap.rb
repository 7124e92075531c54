# frozen_string_literal: true

# Rack::Builder with use/map/run, and Rack::URLMap with hosts and nested paths.
require "rack"
require "stringio"

def env_for(path, host: "example.org", script_name: "")
  { "REQUEST_METHOD" => "GET", "PATH_INFO" => path, "SCRIPT_NAME" => script_name, "QUERY_STRING" => "",
    "SERVER_NAME" => host, "SERVER_PORT" => "80", "HTTP_HOST" => host, "rack.input" => StringIO.new(""),
    "rack.url_scheme" => "http" }
end

def call(app, path, **opts)
  status, headers, body = app.call(env_for(path, **opts))
  parts = []
  body.each { |x| parts << x }
  body.close if body.respond_to?(:close)
  p [path, status, headers.to_h, parts]
end

class Tag
  def initialize(app, tag)
    @app = app
    @tag = tag
  end

  def call(env)
    status, headers, body = @app.call(env)
    headers["x-tag"] = [headers["x-tag"], @tag].compact.join(",")
    [status, headers, body]
  end
end

echo = ->(env) { [200, { "content-type" => "text/plain" }, ["#{env['SCRIPT_NAME']}|#{env['PATH_INFO']}"]] }

app = Rack::Builder.new do
  use Tag, "outer"
  use Rack::ContentLength
  map "/api" do
    use Tag, "api"
    map "/v1" do
      run echo
    end
    run ->(_env) { [404, {}, ["no api"]] }
  end
  map "/static" do
    run echo
  end
  run ->(_env) { [200, { "content-type" => "text/html" }, ["root"]] }
end.to_app

call(app, "/")
call(app, "/api/v1/users/1")
call(app, "/api/v2")
call(app, "/static/a/b.css")
call(app, "/staticfoo")

p Rack::Builder.app { run ->(_env) { [200, {}, ["x"]] } }.call({})[2]

app = Rack::Builder.new do
  warmup { |a| puts "warmup #{a.class}" }
  run ->(_env) { [200, {}, ["ok"]] }
end.to_app
p app.call({})[0]

map = Rack::URLMap.new(
  "/" => ->(_e) { [200, {}, ["default"]] },
  "/a" => echo,
  "/a/b" => echo,
  "http://other.test/" => ->(_e) { [200, {}, ["other host"]] },
  "http://other.test/x" => echo
)
call(map, "/")
call(map, "/a")
call(map, "/a/b/c")
call(map, "/a//b/c")
call(map, "/", host: "other.test")
call(map, "/x/y", host: "other.test")
call(map, "/q", host: "unknown.test")
call(Rack::URLMap.new("/a" => echo), "/b")

