# frozen_string_literal: true

# The app of the HTTP semantics and limits tests: echoes the request line's parts and the body
# (/raw: the body bytes alone), answers 204/304 with a body the server must drop, streams each
# bodies (/each, /each_with_length, /big: 4 MiB), and counts the requests it sees (GET /calls),
# so a test can tell that a rejected request never reached it; /status/NNN answers NNN.
# Runs unmodified on MRI and on Opal, under Rack::Lint.
require "rack/lint"

# An each body of several parts: the server does not know its length.
class EachBody
  def initialize(parts)
    @parts = parts
  end

  def each(&block)
    @parts.each(&block)
  end
end

calls = 0

use Rack::Lint
run lambda { |env|
  path = env["PATH_INFO"]
  calls += 1 unless path == "/calls"
  case path
  when "/calls" then [200, { "content-type" => "text/plain" }, [calls.to_s]]
  when "/no_content" then [204, {}, ["a body the server must not send"]]
  when "/not_modified" then [304, {}, ["a body the server must not send"]]
  when "/each" then [200, { "content-type" => "text/plain" }, EachBody.new(%w[one two three])]
  when "/each_with_length"
    [200, { "content-type" => "text/plain", "content-length" => "11" }, EachBody.new(%w[one two three])]
  when "/raw" then [200, { "content-type" => "application/octet-stream" }, [env["rack.input"].read]]
  when %r{\A/status/(\d{3})\z} then [Integer($1), { "content-type" => "text/plain" }, ["status\n"]]
  when "/big"
    [200, { "content-type" => "text/plain" }, EachBody.new((0...64).map { |i| (97 + (i % 26)).chr * 65_536 })]
  else
    body = env["rack.input"].read
    [200, { "content-type" => "text/plain" }, ["#{env["REQUEST_METHOD"]} #{path}?#{env["QUERY_STRING"]} #{body}"]]
  end
}
