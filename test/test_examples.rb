# frozen_string_literal: true

# Every example app, wrapped in Rack::Lint, served for real: what the README points newcomers
# at must work and be valid Rack.
require_relative "helper"
require "rack"
require "rack/lint"

class TestExamples < Minitest::Test
  include UpTestHelpers

  def serve_example(name, **options)
    app = Rack::Builder.parse_file(File.expand_path("../examples/#{name}/config.ru", __dir__))
    start_server(Rack::Lint.new(app), **options)
  end

  def test_hello
    serve_example("hello")
    res = get("/")
    assert_equal 200, res.status
    assert_equal "Hello World\n", res.body
  end

  def test_env_lists_the_env
    serve_example("env")
    body = get("/some/path?x=1").body
    assert_includes body, 'PATH_INFO = "/some/path"'
    assert_includes body, 'QUERY_STRING = "x=1"'
  end

  # Unmodified Roda (routing, params, JSON, halt, an encrypted session) is valid Rack. Its
  # answers on up_ruby and up_node are compared in test_up_node_apps.rb.
  def test_roda_is_valid_rack_with_its_session
    serve_example("roda")
    assert_equal "Hello, Ada!\n", get("/hello/Ada").body
    assert_equal 403, get("/admin").status
    first = raw_request("POST /visits HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    cookie = first["set-cookie"][/\Aroda\.session=[^;]+/]
    again = raw_request("POST /visits HTTP/1.1\r\nHost: h\r\nCookie: #{cookie}\r\nContent-Length: 0\r\n" \
                        "Connection: close\r\n\r\n")
    assert_equal [%({"visits":1}), %({"visits":2})], [first.body, again.body]
  end

  def test_streaming_sends_ticks_as_they_come
    serve_example("streaming", threads: 2)
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    head = sock.gets("\r\n\r\n")
    assert_includes head, "transfer-encoding: chunked"
    assert_equal "7\r\ntick 0\n\r\n", sock.read(12), "the first tick was not flushed at once"
  end
end
