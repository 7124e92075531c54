# frozen_string_literal: true

# The Rack 3.2 env every runtime builds (SPEC: the CGI keys, HTTP_* headers, rack.url_scheme,
# rack.input, rack.errors), over real sockets against apps/env.ru, which answers with the env
# as JSON.
require_relative "helper"
require "json"
require "up/version"

class TestConformanceRackEnv < ConformanceTest
  serve "env.ru"

  CLOSE = "Connection: close\r\n"

  # name => [request, env values it must give, keys it must not have]; a Symbol value is the
  # test's method of that name (the port, over TLS the scheme and default port, and over HTTP/2
  # the protocol differ)
  CASES = {
    "simple get" => [
      "GET /a/b?x=1&y=2 HTTP/1.1\r\nHost: example.com:8080\r\n#{CLOSE}\r\n",
      { "REQUEST_METHOD" => "GET", "SCRIPT_NAME" => "", "PATH_INFO" => "/a/b", "QUERY_STRING" => "x=1&y=2",
        "SERVER_NAME" => "example.com", "SERVER_PORT" => "8080", "SERVER_PROTOCOL" => :server_protocol,
        "HTTP_HOST" => "example.com:8080", "rack.url_scheme" => :scheme, "REMOTE_ADDR" => "127.0.0.1",
        "REQUEST_URI" => "/a/b?x=1&y=2", "REQUEST_PATH" => "/a/b", "GATEWAY_INTERFACE" => "CGI/1.2",
        "SERVER_SOFTWARE" => "UP! #{Up::VERSION}", "rack.multiprocess" => false,
        "rack.run_once" => false, "rack.input read" => "", "keys are Strings" => true },
      %w[CONTENT_LENGTH CONTENT_TYPE]
    ],
    "no query string" => [
      "GET /p HTTP/1.1\r\nHost: h\r\n#{CLOSE}\r\n",
      { "QUERY_STRING" => "", "SERVER_NAME" => "h", "SERVER_PORT" => :default_port }, []
    ],
    "percent-encoded path" => [
      "GET /a%20b/%E2%9C%93 HTTP/1.1\r\nHost: h\r\n#{CLOSE}\r\n",
      { "PATH_INFO" => "/a%20b/%E2%9C%93" }, []
    ],
    "IPv6 host" => [
      "GET / HTTP/1.1\r\nHost: [::1]:9292\r\n#{CLOSE}\r\n",
      { "SERVER_NAME" => "[::1]", "SERVER_PORT" => "9292" }, []
    ],
    "absolute-form target" => [
      "GET http://other.example:81/x/y?q=1 HTTP/1.1\r\nHost: ignored\r\n#{CLOSE}\r\n",
      { "PATH_INFO" => "/x/y", "QUERY_STRING" => "q=1", "SERVER_NAME" => "other.example", "SERVER_PORT" => "81",
        "HTTP_HOST" => "other.example:81" }, []
    ],
    "OPTIONS asterisk-form" => [
      "OPTIONS * HTTP/1.1\r\nHost: h\r\n#{CLOSE}\r\n",
      { "REQUEST_METHOD" => "OPTIONS", "PATH_INFO" => "*" }, []
    ],
    "repeated headers" => [
      "GET / HTTP/1.1\r\nHost: h\r\nAccept: a\r\nAccept: b\r\nCookie: x=1\r\nCookie: y=2\r\n" \
      "X-Custom-Thing: v\r\n#{CLOSE}\r\n",
      { "HTTP_ACCEPT" => "a, b", "HTTP_COOKIE" => "x=1; y=2", "HTTP_X_CUSTOM_THING" => "v" }, []
    ],
    "underscore header beside its dash spelling" => [
      "GET / HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 1.1.1.1\r\nX_Forwarded_For: 6.6.6.6\r\n#{CLOSE}\r\n",
      { "HTTP_X_FORWARDED_FOR" => "1.1.1.1" }, []
    ],
    "post with content type and length" => [
      "POST /f HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n#{CLOSE}\r\nabc",
      { "REQUEST_METHOD" => "POST", "CONTENT_TYPE" => "text/plain", "CONTENT_LENGTH" => "3", "rack.input read" => "abc" },
      %w[HTTP_CONTENT_TYPE HTTP_CONTENT_LENGTH]
    ],
    "chunked post" => [
      "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n#{CLOSE}\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
      { "CONTENT_LENGTH" => "5", "rack.input read" => "abcde" }, []
    ],
    "HTTP/1.0 without Host" => [
      "GET / HTTP/1.0\r\n\r\n",
      { "SERVER_PROTOCOL" => "HTTP/1.0", "SERVER_NAME" => "127.0.0.1", "SERVER_PORT" => :port }, %w[HTTP_HOST]
    ]
  }.freeze

  CASES.each do |name, (request, expected, absent)|
    define_method("test_env_for_#{name.tr(" /.-", "_").downcase}") do
      res = raw_request(request)
      assert_equal 200, res.status, res.raw
      env = JSON.parse(res.body)
      expected.each do |key, value|
        value = public_send(value) if value.is_a?(Symbol)
        assert_equal value, env[key], key
      end
      absent.each { |key| refute env.key?(key), "#{key} must not be in the env" }
    end
  end

  # The port the client connected to, as a String.
  def port
    @port.to_s
  end

  def server_protocol
    http2? ? "HTTP/2" : "HTTP/1.1"
  end

  # HTTPS is "on" over TLS only (a CGI variable Rack::Request#ssl? reads), beside the scheme.
  def test_https_is_on_over_tls_only
    env = JSON.parse(raw_request("GET / HTTP/1.1\r\nHost: h\r\n#{CLOSE}\r\n").body)
    if Conformance::TLS
      assert_equal %w[on https], env.values_at("HTTPS", "rack.url_scheme")
    else
      assert_equal [false, "http"], [env.key?("HTTPS"), env["rack.url_scheme"]]
    end
  end

  # The same keys on every runtime, so an app that looks one up finds it everywhere (and HTTPS
  # over TLS). Over HTTP/2 the request has no Connection field (RFC 9113 §8.2.2) and a stream
  # cannot be hijacked (docs/http2.md).
  def test_env_has_the_same_keys_on_every_runtime
    res = raw_request("POST /k?q HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n#{CLOSE}\r\nx")
    keys = %w[CONTENT_LENGTH CONTENT_TYPE GATEWAY_INTERFACE HTTP_CONNECTION HTTP_HOST PATH_INFO QUERY_STRING REMOTE_ADDR
              REQUEST_METHOD REQUEST_PATH REQUEST_URI SCRIPT_NAME SERVER_NAME SERVER_PORT SERVER_PROTOCOL SERVER_SOFTWARE
              rack.early_hints rack.errors rack.hijack rack.hijack? rack.input rack.multiprocess rack.multithread
              rack.response_finished rack.run_once rack.upgrade? rack.url_scheme rack.version sendfile.type]
    keys = (keys + ["HTTPS"]).sort if Conformance::TLS
    keys -= %w[HTTP_CONNECTION rack.hijack] if http2?
    assert_equal keys, JSON.parse(res.body)["keys"]
  end

  # SPEC, "Hijacking": rack.hijack? says partial hijack is supported, rack.hijack is the full
  # hijack's callable (test/test_hijack.rb uses both).
  def test_env_offers_full_and_partial_hijack
    env = JSON.parse(raw_request("GET / HTTP/1.1\r\nHost: h\r\n#{CLOSE}\r\n").body)
    assert_equal true, env["rack.hijack?"]
    assert_includes env["keys"], "rack.hijack"
  end

  def test_env_values_follow_the_spec
    res = get("/spec")
    assert_equal 200, res.status, res.raw
    JSON.parse(res.body).each { |rule, holds| assert_equal true, holds, rule }
  end

  def test_rack_input_reads_gets_each_and_rewinds_like_an_io
    body = "ab\ncd\nef"
    res = raw_request("POST /input HTTP/1.1\r\nHost: h\r\nContent-Length: #{body.bytesize}\r\n#{CLOSE}\r\n#{body}")
    assert_equal 200, res.status, res.raw
    expected = { "read(3)" => "ab\n", "gets" => "cd\n", "read" => "ef", "read at eof" => "", "read(3) at eof" => nil,
                 "each" => ["ab\n", "cd\n", "ef"], "read after rewind" => body, "encoding" => "ASCII-8BIT" }
    assert_equal expected, JSON.parse(res.body)
  end

  def test_rack_errors_writes_reach_the_server_log
    assert_equal 200, get("/errors").status
    server.wait_for(/conformance: puts to rack\.errors\n/)
    server.wait_for(/conformance: write to rack\.errors\n/)
  end
end
