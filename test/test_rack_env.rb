# frozen_string_literal: true

# The env the app gets (Rack 3.2's SPEC.rdoc), checked by Rack::Lint
# around a probe app and by direct assertions, over real sockets.
require_relative "helper"
require "rack"
require "rack/lint"
require "json"

class TestRackEnv < Minitest::Test
  include UpTestHelpers

  # Answers with the env's String values as JSON, through Rack::Lint.
  PROBE = lambda do |env|
    input = env["rack.input"]
    seen = env.select { |_k, v| v.is_a?(String) }
    seen["rack.input.read"] = input.read
    seen["rack.multithread"] = env["rack.multithread"]
    seen["rack.multiprocess"] = env["rack.multiprocess"]
    seen["rack.version"] = env["rack.version"]
    seen["keys_are_strings"] = env.keys.all?(String)
    seen["frozen"] = env.frozen?
    seen["input_encoding"] = input.read.encoding.to_s
    body = JSON.generate(seen.transform_values { |v| v.is_a?(String) ? v.dup.force_encoding("UTF-8").scrub : v })
    [200, { "content-type" => "application/json" }, [body]]
  end

  def setup
    start_server(Rack::Lint.new(PROBE))
  end

  def env_for(request)
    res = raw_request(request)
    assert_equal 200, res.status, res.raw
    JSON.parse(res.body)
  end

  def test_required_keys_for_a_simple_get
    env = env_for("GET /a/b?x=1&y=2 HTTP/1.1\r\nHost: example.com:8080\r\nConnection: close\r\n\r\n")
    assert_equal "GET", env["REQUEST_METHOD"]
    assert_equal "", env["SCRIPT_NAME"]
    assert_equal "/a/b", env["PATH_INFO"]
    assert_equal "x=1&y=2", env["QUERY_STRING"]
    assert_equal "/a/b?x=1&y=2", env["REQUEST_URI"]
    assert_equal "example.com", env["SERVER_NAME"]
    assert_equal "8080", env["SERVER_PORT"]
    assert_equal "HTTP/1.1", env["SERVER_PROTOCOL"]
    assert_equal "http", env["rack.url_scheme"]
    assert_equal "127.0.0.1", env["REMOTE_ADDR"]
    assert_equal "example.com:8080", env["HTTP_HOST"]
    assert_equal true, env["keys_are_strings"]
    assert_equal false, env["frozen"]
    assert_equal "", env["rack.input.read"]
    assert_equal "ASCII-8BIT", env["input_encoding"]
  end

  def test_query_string_present_and_empty_without_question_mark
    env = env_for("GET /p HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    assert_equal "", env["QUERY_STRING"]
    assert_equal "80", env["SERVER_PORT"]
  end

  def test_server_name_for_ipv6_host_keeps_brackets
    env = env_for("GET / HTTP/1.1\r\nHost: [::1]:9292\r\nConnection: close\r\n\r\n")
    assert_equal "[::1]", env["SERVER_NAME"]
    assert_equal "9292", env["SERVER_PORT"]
  end

  def test_http10_without_host_falls_back_to_listening_address
    env = env_for("GET / HTTP/1.0\r\n\r\n")
    assert_equal "HTTP/1.0", env["SERVER_PROTOCOL"]
    assert_equal "127.0.0.1", env["SERVER_NAME"]
    assert_equal @port.to_s, env["SERVER_PORT"]
    refute env.key?("HTTP_HOST")
  end

  def test_absolute_form_target_gives_path_and_host
    env = env_for("GET http://other.example:81/x/y?q=1 HTTP/1.1\r\nHost: ignored\r\nConnection: close\r\n\r\n")
    assert_equal "/x/y", env["PATH_INFO"]
    assert_equal "q=1", env["QUERY_STRING"]
    assert_equal "other.example", env["SERVER_NAME"]
    assert_equal "81", env["SERVER_PORT"]
    assert_equal "other.example:81", env["HTTP_HOST"]
  end

  def test_options_asterisk_form
    env = env_for("OPTIONS * HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    assert_equal "OPTIONS", env["REQUEST_METHOD"]
    assert_equal "*", env["PATH_INFO"]
  end

  def test_path_stays_percent_encoded
    env = env_for("GET /a%20b/%E2%9C%93 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    assert_equal "/a%20b/%E2%9C%93", env["PATH_INFO"]
  end

  def test_headers_become_http_keys_and_repeats_are_joined
    env = env_for("GET / HTTP/1.1\r\nHost: h\r\nAccept: a\r\nAccept: b\r\nCookie: x=1\r\n" \
                  "Cookie: y=2\r\nX-Custom-Thing: v\r\nConnection: close\r\n\r\n")
    assert_equal "a, b", env["HTTP_ACCEPT"]
    assert_equal "x=1; y=2", env["HTTP_COOKIE"]
    assert_equal "v", env["HTTP_X_CUSTOM_THING"]
  end

  def test_underscore_header_cannot_override_dash_header
    env = env_for("GET / HTTP/1.1\r\nHost: h\r\nX-Forwarded-For: 1.1.1.1\r\n" \
                  "X_Forwarded_For: 6.6.6.6\r\nConnection: close\r\n\r\n")
    assert_equal "1.1.1.1", env["HTTP_X_FORWARDED_FOR"]
    env = env_for("GET / HTTP/1.1\r\nHost: h\r\nX_Only: u\r\nConnection: close\r\n\r\n")
    assert_equal "u", env["HTTP_X_ONLY"]
  end

  def test_content_length_and_type_are_cgi_keys
    env = env_for("POST /f HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n" \
                  "Connection: close\r\n\r\nabc")
    assert_equal "3", env["CONTENT_LENGTH"]
    assert_equal "text/plain", env["CONTENT_TYPE"]
    refute env.key?("HTTP_CONTENT_LENGTH")
    refute env.key?("HTTP_CONTENT_TYPE")
    assert_equal "abc", env["rack.input.read"]
  end

  def test_chunked_body_is_decoded_and_length_given
    env = env_for("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" \
                  "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
    assert_equal "abcde", env["rack.input.read"]
    assert_equal "5", env["CONTENT_LENGTH"]
  end

  def test_multithread_and_multiprocess_tell_the_truth
    env = env_for("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    assert_equal false, env["rack.multithread"]
    assert_equal false, env["rack.multiprocess"]
    assert_equal [1, 3], env["rack.version"]
    threaded = start_server(Rack::Lint.new(PROBE), threads: 4)
    res = raw_request("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", port: threaded.port)
    assert_equal true, JSON.parse(res.body)["rack.multithread"]
  end

  # The CLI gives its log's IO (the -l file), so what the app writes there is in the log.
  def test_rack_errors_is_the_io_given_as_errors
    errors = StringIO.new
    start_server(lambda { |env|
      env["rack.errors"].write("from the app")
      [200, {}, [env["rack.errors"].equal?(errors).to_s]]
    }, errors: errors)
    assert_equal "true", raw_request("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").body
    assert_equal "from the app", errors.string
  end

  def test_non_ascii_header_value_is_binary
    res = raw_request("GET / HTTP/1.1\r\nHost: h\r\nX-Name: caf\xC3\xA9\r\nConnection: close\r\n\r\n".b)
    assert_equal 200, res.status, res.raw
    assert_equal "café", JSON.parse(res.body)["HTTP_X_NAME"]
  end
end
