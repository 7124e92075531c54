# frozen_string_literal: true

# The app of the response and error tests: one body kind per path (/array, /each, /call,
# /to_path?FILE, /proxy), how many bodies were closed (/closed: those of the requests whose
# x-test-tag was the same, so that a test counts its own bodies, not one an earlier test's
# request closes late), Array header values
# (/cookies), early hints (/hints, /hints_without_link), exceptions (/raise, /raise_in_each), and under /invalid/
# responses that break the SPEC, which the server must answer with a 500. Runs unmodified on
# MRI and on Opal, under Rack::Lint where the runtime can load it (but /invalid/, which Lint
# would refuse before the server sees it).
require "rack/body_proxy"
require "rack/lint"

# Counts the bodies the server closed by the x-test-tag of their requests, for /closed.
module ClosedCount
  @counts = Hash.new(0)

  def self.closed(env)
    @counts[env["HTTP_X_TEST_TAG"]] += 1
  end

  def self.of(env)
    @counts[env["HTTP_X_TEST_TAG"]]
  end
end

# An each body that records its close.
class EachBody
  def initialize(env, parts, raise_in_each: false)
    @env = env
    @parts = parts
    @raise_in_each = raise_in_each
  end

  def each(&block)
    raise "kaboom in each" if @raise_in_each

    @parts.each(&block)
  end

  def close
    ClosedCount.closed(@env)
  end
end

# A body served from a file: the server may send the file (to_path) or call each.
class FileBody < EachBody
  def initialize(env, path)
    super(env, [])
    @path = path
  end

  def to_path
    @path
  end

  def each
    yield File.read(@path)
  end
end

# A fresh Hash each time: Rack::Lint refuses frozen response headers.
def text
  { "content-type" => "text/plain" }
end

INVALID = {
  "status_word" => ["OK", {}, ["x"]],
  "status_out_of_range" => [42, {}, ["x"]],
  "header_name_with_space" => [200, { "bad name" => "v" }, ["x"]],
  "header_value_with_newline" => [200, { "x-injected" => "a\r\nset-cookie: evil=1" }, ["x"]],
  "body_part_not_a_string" => [200, {}, [1]],
  "not_a_triple" => [200, {}]
}.freeze

app = lambda do |env|
  case env["PATH_INFO"]
  when "/array" then [200, text, ["ab", "cd", ""]]
  when "/each" then [200, text, EachBody.new(env, ["one ", "", "two"])]
  when "/call"
    [200, text, lambda { |stream|
      stream.write("hello ")
      stream << "streaming "
      stream.write("world")
      stream.close
    }]
  when "/to_path" then [200, text, FileBody.new(env, env["QUERY_STRING"])]
  when "/proxy" then [200, text, Rack::BodyProxy.new(["proxied"]) { ClosedCount.closed(env) }]
  when "/closed" then [200, text, [ClosedCount.of(env).to_s]]
  when "/cookies" then [200, { "set-cookie" => ["a=1; path=/", "b=2"], "x-multi" => %w[one two] }, ["ok"]]
  when "/hints"
    env["rack.early_hints"].call({ "link" => ["</a.css>; rel=preload", "</b.js>; rel=preload"] })
    [200, text, ["after hints"]]
  when "/hints_without_link"
    env["rack.early_hints"].call({ "x-hint" => "a" })
    [200, text, ["after hints"]]
  when "/raise" then raise ArgumentError, "kaboom from the app"
  when "/raise_in_each" then [200, text, EachBody.new(env, ["never sent"], raise_in_each: true)]
  else [404, text, ["not found"]]
  end
end
linted = Rack::Lint.new(app)

run lambda { |env|
  path = env["PATH_INFO"]
  path.start_with?("/invalid/") ? INVALID.fetch(path.delete_prefix("/invalid/")) : linted.call(env)
}
