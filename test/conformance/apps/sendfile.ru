# frozen_string_literal: true

# The app of the x-sendfile tests (test_sendfile.rb): each path names a way an app hands the
# server a file, whose path is the query string. /sendfile: Rack::Sendfile over a body with
# to_path (it reads the env's sendfile.type and sets x-sendfile); /to_path: that body alone;
# /field: an x-sendfile field the app sets itself, with its own content-type; /rack2_field: the
# same field spelled X-Sendfile, as a Rack 2 app sends it; /no_content: that field on a 204;
# /status/CODE: the app's own status;
# /validators: the app's own etag and last-modified; /closed: how many bodies of requests with
# the same x-test-tag were closed (a test counts its own);
# /env: the env's sendfile.type. Runs unmodified on MRI and on Opal.
require "rack/body_proxy"
require "rack/sendfile"

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

# A body served from a file: the server is to send the file; each is there for the SPEC.
class FileBody
  def initialize(env, path)
    @env = env
    @path = path
  end

  def to_path
    @path
  end

  def each
    yield File.read(@path)
  end

  def close
    ClosedCount.closed(@env)
  end
end

TYPE = "application/x-up-test"

def closing(env, fields)
  [200, fields, Rack::BodyProxy.new([]) { ClosedCount.closed(env) }]
end

file_app = ->(env) { [200, { "content-type" => TYPE }, FileBody.new(env, env["QUERY_STRING"])] }
sendfile = Rack::Sendfile.new(file_app)

run(lambda do |env|
  path = env["QUERY_STRING"]
  case env["PATH_INFO"]
  when "/sendfile" then sendfile.call(env)
  when "/to_path" then file_app.call(env)
  when "/field" then closing(env, { "x-sendfile" => path, "content-type" => TYPE })
  when "/rack2_field" then closing(env, { "X-Sendfile" => path, "content-type" => TYPE })
  when "/no_content" then [204, { "X-Sendfile" => path }, []]
  when %r{\A/status/(\d+)\z} then [Integer(Regexp.last_match(1)), { "content-type" => "text/plain" }, FileBody.new(env, path)]
  when "/validators"
    closing(env, { "x-sendfile" => path, "etag" => '"app-tag"', "last-modified" => "Sun, 06 Nov 1994 08:49:37 GMT" })
  when "/closed" then [200, { "content-type" => "text/plain" }, [ClosedCount.of(env).to_s]]
  when "/env" then [200, { "content-type" => "text/plain" }, [env["sendfile.type"].to_s]]
  else [404, { "content-type" => "text/plain" }, ["no route\n"]]
  end
end)
