# frozen_string_literal: true

# Rack::Lint around good and bad apps, driven by Rack::MockRequest.
require "rack"
require "rack/lint"
require "rack/mock_request"

def lint(app, method: "GET", **env)
  res = Rack::MockRequest.new(Rack::Lint.new(app)).request(method, "/path?q=1", env)
  p ["ok", res.status, res.headers.to_h, res.body]
rescue Rack::Lint::LintError => e
  p ["lint", e.message]
end

good = ->(env) do
  input = env["rack.input"]
  body = input ? input.read : ""
  [200, { "content-type" => "text/plain", "x-list" => ["a", "b"] }, ["got:", body, env["QUERY_STRING"]]]
end
lint good
lint good, method: "POST", input: "a=1&b=2", "CONTENT_TYPE" => "application/x-www-form-urlencoded"

streaming = ->(_env) { [200, { "content-type" => "text/plain" }, ->(stream) { stream.write("streamed"); stream.close }] }
lint streaming

lint ->(_env) { [200, { "Content-Type" => "text/plain" }, ["x"]] }
lint ->(_env) { [200, { "content-type" => "text/plain", "x-bad" => "a\nb" }, ["x"]] }
lint ->(_env) { [200, { "content-type" => "text/plain", "bad header" => "x" }, ["x"]] }
lint ->(_env) { [200, { "content-type" => "text/plain", "bad\u0001" => "x" }, ["x"]] }
lint ->(_env) { [200, { "content-type" => "text/plain", "bad:name" => "x" }, ["x"]] }
lint ->(_env) { [200, { "content-type" => "text/plain", "status" => "200" }, ["x"]] }
lint ->(_env) { ["200", { "content-type" => "text/plain" }, ["x"]] }
lint ->(_env) { [99, {}, []] }
lint ->(_env) { [204, { "content-type" => "text/plain" }, []] }
# Opal Symbols are Strings, so a Symbol part would pass there; an Integer fails on both.
lint ->(_env) { [200, { "content-type" => "text/plain" }, [42]] }
lint ->(_env) { [200, [], ["x"]] }
lint ->(_env) { [200, { "content-type" => "text/plain" }] }
lint ->(env) { env["rack.input"].read(-1); [200, {}, []] }, method: "POST", input: "x"
lint ->(env) { env.delete("REQUEST_METHOD"); [200, {}, []] }
lint ->(env) { env["HTTP_X"] = 1; [200, {}, []] }
lint ->(env) { env["rack.response_finished"] = :x; [200, {}, []] }
