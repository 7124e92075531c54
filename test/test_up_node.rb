# frozen_string_literal: true

# up_node as a user runs it (exe/up_node, a real Node process on a loopback port): the Rack
# env it builds, request bodies, each of the body kinds, headers, app errors, limits and the
# CLI's messages. The app is test/rackup/features.ru, compiled by Opal once for the run.
require_relative "helper"
require_relative "support/up_node_process"
require "json"

class TestUpNode < Minitest::Test
  include UpTestHelpers
  include UpNodeProcess

  def test_serves_the_hello_example
    start_up_node("examples/hello/config.ru")
    res = get("/")
    assert_equal 200, res.status
    assert_equal "Hello World\n", res.body
    assert_equal "12", res["content-length"]
    assert_equal "text/plain", res["content-type"]
  end

  def test_env_has_up_rubys_keys_and_values
    start_up_node
    res = raw_request("GET /env?x=1&y=2 HTTP/1.1\r\nHost: example.test:8080\r\nX-Custom: a\r\n" \
                      "X-Custom: b\r\nCookie: c=1\r\nCookie: d=2\r\nX_Forwarded_For: spoof\r\n" \
                      "X-Forwarded-For: proxy\r\nConnection: close\r\n\r\n")
    assert_equal 200, res.status
    env = JSON.parse(res.body)
    expected = {
      "REQUEST_METHOD" => "GET", "SCRIPT_NAME" => "", "PATH_INFO" => "/env", "REQUEST_PATH" => "/env",
      "QUERY_STRING" => "x=1&y=2", "REQUEST_URI" => "/env?x=1&y=2", "SERVER_NAME" => "example.test",
      "SERVER_PORT" => "8080", "SERVER_PROTOCOL" => "HTTP/1.1", "REMOTE_ADDR" => "127.0.0.1",
      "HTTP_HOST" => "example.test:8080", "HTTP_X_CUSTOM" => "a, b", "HTTP_COOKIE" => "c=1; d=2",
      "HTTP_X_FORWARDED_FOR" => "proxy", "SERVER_SOFTWARE" => "UP! #{Up::VERSION}",
      "GATEWAY_INTERFACE" => "CGI/1.2", "rack.url_scheme" => "http", "rack.hijack?" => false,
      "rack.multithread" => false, "rack.multiprocess" => false, "rack.run_once" => false
    }
    expected.each { |key, value| assert_equal value, env[key], key }
  end

  UP_RUBY_ONLY = %w[rack.hijack?].freeze

  ENV_REQUESTS = [
    "POST /env?a=b HTTP/1.1\r\nHost: same.test:9\r\nX-A: 1\r\nX-A: 2\r\nCookie: k=v\r\nCookie: l=w\r\n" \
    "Content-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
    "POST /env HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    "GET http://other.test:81/env?q HTTP/1.1\r\nHost: ignored\r\nConnection: close\r\n\r\n",
    "GET /env HTTP/1.1\r\nHost: [::1]:3000\r\nX_Forwarded_For: spoof\r\nX-Forwarded-For: proxy\r\n" \
    "X_Real_Ip: only\r\nConnection: close\r\n\r\n",
    "GET /env HTTP/1.0\r\n\r\n"
  ].freeze

  # Each request above to features.ru on up_ruby (-t 1: one app thread, as Node has) and on
  # up_node: every String and boolean in the env is the same, but for the server's own port and
  # rack.hijack? (up_node has no hijack: docs/opal.md, Known gaps).
  def test_env_is_the_same_as_up_rubys
    ruby = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", "-t", "1", UpNodeProcess::FEATURES)
    on_ruby = begin
      ENV_REQUESTS.map { |request| raw_request(request, port: ruby.port).body.gsub(ruby.port.to_s, "PORT") }
    ensure
      ruby.stop
    end
    start_up_node
    ENV_REQUESTS.each_with_index do |request, i|
      on_node = raw_request(request).body.gsub(@port.to_s, "PORT")
      assert_equal JSON.parse(on_ruby[i]).except(*UP_RUBY_ONLY), JSON.parse(on_node).except(*UP_RUBY_ONLY),
                   request
    end
  end

  def test_absolute_form_target_sets_host_and_path
    start_up_node
    res = raw_request("GET http://other.test/env?q HTTP/1.1\r\nHost: ignored\r\nConnection: close\r\n\r\n")
    env = JSON.parse(res.body)
    assert_equal ["other.test", "80", "/env", "q"], env.values_at("HTTP_HOST", "SERVER_PORT", "PATH_INFO", "QUERY_STRING")
  end

  def test_post_body_reaches_rack_input_as_binary
    start_up_node
    body = "h\u00e9llo world".b # 12 bytes, two of them one character
    res = raw_request("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: #{body.bytesize}\r\n" \
                      "Connection: close\r\n\r\n#{body}")
    assert_equal 200, res.status
    _first, rest, size, encoding = res.body.split("|")
    assert_equal "llo world", rest
    assert_equal "12", size
    assert_equal "ASCII-8BIT", encoding
  end

  def test_chunked_post_body_reaches_rack_input
    start_up_node
    res = raw_request("POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" \
                      "4\r\nabcd\r\n3\r\nefg\r\n0\r\n\r\n")
    assert_equal "abc|defg|7|ASCII-8BIT", res.body
  end

  def test_streaming_body_goes_out_chunked
    start_up_node
    res = get("/stream")
    assert_equal 200, res.status
    assert_equal "chunked", res["transfer-encoding"]
    assert_equal "part 0\npart 1\npart 2\n", res.body
  end

  def test_each_body_is_sent_and_closed
    start_up_node
    assert_equal "0", get("/closed").body
    assert_equal "one two", get("/each").body
    assert_equal "1", get("/closed").body
  end

  # Plain Arrays of Strings are checked and sent by JS in one call (Exchange#sendCommon);
  # an Array with a close, callbacks or a part that is no String still get the Responder's
  # rules.
  def test_array_bodies_keep_the_responders_rules
    start_up_node
    assert_equal "0", get("/closed").body
    assert_equal "closable", get("/array_with_close").body
    assert_equal "1", get("/closed").body
    get("/finished") # its callback runs once the response is done, after the client has it
    seen = nil
    20.times { break if (seen = get("/finished").body) != "0" }
    refute_equal "0", seen, "rack.response_finished callbacks run"
    assert_equal 500, get("/bad_part").status
    assert_equal 500, raw_request("HEAD /bad_part HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", head: true).status
    assert_equal 204, get("/no_content_bad_part").status
  end

  def test_to_path_body_sends_the_file_and_is_closed
    start_up_node
    res = get("/file")
    assert_equal File.binread(File.join(CLIProcess::ROOT, "examples/hello/config.ru")), res.body
    assert_equal res.body.bytesize.to_s, res["content-length"]
    assert_equal "1", get("/closed").body
  end

  # The body is closed as its last bytes go out, and the response still ends: the connection
  # serves the next request.
  def test_to_path_body_keeps_the_connection_for_the_next_request
    start_up_node
    sock = connect
    2.times do |i|
      sock.write("GET /file HTTP/1.1\r\nHost: h\r\n\r\n")
      assert_equal File.binread(File.join(CLIProcess::ROOT, "examples/hello/config.ru")), read_response(sock).body
      sock.write("GET /closed HTTP/1.1\r\nHost: h\r\n\r\n")
      assert_equal (i + 1).to_s, read_response(sock).body
    end
  end

  # A lambda app is called without Proc#call (Up::Node::Handler#direct_lambda?) only where
  # that changes nothing: a `call` defined on the lambda still answers.
  def test_a_lambda_apps_own_call_answers
    with_rackup(<<~RUBY) { assert_equal "its own call", get("/").body }
      app = ->(_env) { [200, {}, ["the lambda"]] }
      def app.call(_env) = [200, {}, ["its own call"]]
      run app
    RUBY
  end

  # Opal 1.8 leaves a `return` in a block inside a lambda uncaught: a 500 whose log line says
  # what escaped and why, not "undefined".
  def test_a_return_escaping_a_lambda_app_is_a_500_that_says_why
    source = <<~RUBY
      run ->(env) {
        [1].each { return [200, {}, ["from the block"]] } if env["PATH_INFO"] == "/return"
        [200, {}, ["after"]]
      }
    RUBY
    with_rackup(source) do |server|
      assert_equal 500, get("/return").status
      assert_equal "after", get("/").body
      server.wait_for(%r{error in GET /return: a 'return' in a block escaped the app: Opal 1\.8})
    end
  end

  def test_app_exception_is_a_logged_500_and_the_server_keeps_serving
    server = start_up_node
    sock = connect
    sock.write("GET /fail HTTP/1.1\r\nHost: h\r\n\r\n")
    res = read_response(sock)
    assert_equal 500, res.status
    assert_equal "Internal Server Error\n", res.body
    refute_includes res.body, "kaboom"
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    assert_equal "hello", read_response(sock).body
    server.wait_for(/features\.ru:\d+/)
    assert_includes server.output, "error in GET /fail"
    assert_includes server.output, "kaboom from the app (ArgumentError)"
  end

  def test_an_error_raised_from_a_timer_is_logged_and_the_server_keeps_serving
    server = start_up_node("test/rackup/opal_timer_error.ru")
    assert_equal "scheduled", get("/").body
    server.wait_for(/error outside a request: .*kaboom from a timer/)
    assert_equal "scheduled", get("/").body
  end

  def test_array_header_values_are_repeated_lines_and_cookies_never_merged
    start_up_node
    res = get("/cookies")
    assert_equal ["a=1; path=/", "b=2"], res.headers["set-cookie"]
    assert_equal %w[one two], res.headers["x-multi"]
    assert_includes res.raw, "set-cookie: a=1; path=/\r\nset-cookie: b=2\r\n"
  end

  def test_body_over_the_limit_is_413_before_it_is_read
    start_up_node("--max-body-size", "10")
    res = raw_request("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n")
    assert_equal 413, res.status
    assert_equal "close", res["connection"]
  end

  def test_chunked_body_over_the_limit_is_413
    start_up_node("--max-body-size", "10")
    res = raw_request("POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" \
                      "6\r\nabcdef\r\n6\r\nghijkl\r\n0\r\n\r\n")
    assert_equal 413, res.status
  end

  def test_too_many_header_fields_is_431
    start_up_node("--max-headers", "3")
    assert_equal 200, raw_request("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nConnection: close\r\n\r\n").status
    res = raw_request("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nConnection: close\r\n\r\n")
    assert_equal 431, res.status
  end

  def test_head_over_the_limit_is_431_from_nodes_parser
    start_up_node("--max-head-size", "1024")
    res = raw_request("GET / HTTP/1.1\r\nHost: h\r\nX-Big: #{"a" * 2000}\r\n\r\n")
    assert_equal 431, res.status
    assert_equal "Request Header Fields Too Large\n", res.body
  end

  def test_malformed_request_is_400
    start_up_node
    res = raw_request("GET / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
    assert_equal 400, res.status
  end

  def test_expect_continue_with_a_body_over_the_limit_is_413_without_100
    start_up_node("--max-body-size", "10")
    res = raw_request("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\nExpect: 100-continue\r\n\r\n")
    assert_equal 413, res.status
  end

  def test_expect_continue_gets_100_then_the_response
    start_up_node
    sock = connect
    sock.write("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n")
    assert_equal 100, read_response(sock).status
    sock.write("abcd")
    assert_equal "abc|d|4|ASCII-8BIT", read_response(sock).body
  end

  def test_early_hints_go_out_as_a_103_before_the_response
    start_up_node
    sock = connect
    sock.write("GET /hints HTTP/1.1\r\nHost: h\r\n\r\n")
    hints = read_response(sock)
    assert_equal 103, hints.status
    assert_equal "</style.css>; rel=preload", hints["link"]
    assert_equal "after hints", read_response(sock).body
  end

  def test_a_head_that_never_ends_is_408
    start_up_node("--head-timeout", "1")
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n")
    res = read_response(sock)
    assert_equal 408, res.status
    assert closed_by_server?(sock)
  end

  def test_bad_option_is_the_same_one_line_error_as_up_ruby
    status, out = run_up_node("--head-timeout", "100000")
    assert_equal 1, status.exitstatus
    assert_equal "up_node: --head-timeout must be between 0 and 86400 seconds\nTry 'up_node --help'.\n", out
  end

  # Said before the app is compiled, in up_ruby's words.
  def test_port_in_use_is_a_clear_error
    first = start_up_node
    status, out = run_up_node("-p", first.port.to_s)
    assert_equal 1, status.exitstatus
    assert_equal "up_node: cannot listen on tcp://127.0.0.1:#{first.port}: Address already in use - bind(2) " \
                 "for 127.0.0.1:#{first.port}\n", out
  end

  def test_missing_config_ru_is_a_clear_error
    status, out = run_up_node("nope/config.ru")
    assert_equal 1, status.exitstatus
    assert_equal "up_node: nope/config.ru not found\n", out
  end

  private

  # up_node on a config.ru of the given source, written in a directory of its own; yields the
  # server.
  def with_rackup(source)
    Dir.mktmpdir do |dir|
      rackup = File.join(dir, "config.ru")
      File.write(rackup, source)
      yield start_up_node(rackup)
    end
  end
end
