# frozen_string_literal: true

# `up` as a user runs it (exe/up: the Opal-compiled app on Node, the engine as the up.node
# addon on Node's libuv loop) on a loopback port, with a real client: responses, keep-alive
# and pipelining (RFC 9112 §9.3), the env, body kinds, app errors, and a request the engine
# refuses (RFC 9112 §3: a malformed request line is a 400, then the connection closes).
require_relative "helper"
require_relative "support/up_process"
require "json"
require "tmpdir"

class TestUp < Minitest::Test
  include UpTestHelpers
  include UpProcess

  def test_serves_the_hello_example
    start_up("examples/hello/config.ru")
    res = get("/")
    assert_equal 200, res.status
    assert_equal "Hello World\n", res.body
    assert_equal "12", res["content-length"]
    assert_equal "text/plain", res["content-type"]
    assert res["date"], "the engine's Date header"
  end

  def test_hello_ru_keeps_the_connection_alive
    start_up("test/rackup/hello.ru")
    sock = connect
    3.times do
      sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
      res = read_response(sock)
      assert_equal 200, res.status
      assert_equal "Hello World", res.body
      assert_nil res["connection"], "keep-alive is HTTP/1.1's default: nothing said"
    end
    sock.write("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    assert_equal "close", read_response(sock)["connection"]
    assert closed_by_server?(sock)
  end

  def test_pipelined_requests_are_answered_in_order
    start_up
    sock = connect
    sock.write(%w[/calls /each /calls].map { |path| "GET #{path} HTTP/1.1\r\nHost: h\r\n\r\n" }.join)
    first, each, last = Array.new(3) { read_response(sock) }
    assert_equal "one two", each.body
    assert_equal first.body.to_i + 1, last.body.to_i, "in order, each app call once"
  end

  def test_env_has_up_rubys_keys_and_values
    start_up
    res = raw_request("GET /env?x=1&y=2 HTTP/1.1\r\nHost: example.test:8080\r\nX-Custom: a\r\n" \
                      "X-Custom: b\r\nCookie: c=1\r\nCookie: d=2\r\nX_Forwarded_For: spoof\r\n" \
                      "X-Forwarded-For: proxy\r\nConnection: close\r\n\r\n")
    env = JSON.parse(res.body)
    expected = {
      "REQUEST_METHOD" => "GET", "SCRIPT_NAME" => "", "PATH_INFO" => "/env", "REQUEST_PATH" => "/env",
      "QUERY_STRING" => "x=1&y=2", "REQUEST_URI" => "/env?x=1&y=2", "SERVER_NAME" => "example.test",
      "SERVER_PORT" => "8080", "SERVER_PROTOCOL" => "HTTP/1.1", "REMOTE_ADDR" => "127.0.0.1",
      "HTTP_HOST" => "example.test:8080", "HTTP_X_CUSTOM" => "a, b", "HTTP_COOKIE" => "c=1; d=2",
      "HTTP_X_FORWARDED_FOR" => "proxy", "SERVER_SOFTWARE" => "UP! #{Up::VERSION}",
      "GATEWAY_INTERFACE" => "CGI/1.2", "rack.url_scheme" => "http", "rack.hijack?" => true,
      "rack.multithread" => false, "rack.multiprocess" => false, "rack.run_once" => false
    }
    expected.each { |key, value| assert_equal value, env[key], key }
  end

  # The same requests as test_up_node.rb's, to up_ruby (-t 1) and to up: every String and
  # boolean in the env is the same but the port.
  ENV_REQUESTS = [
    "POST /env?a=b HTTP/1.1\r\nHost: same.test:9\r\nX-A: 1\r\nX-A: 2\r\nCookie: k=v\r\nCookie: l=w\r\n" \
    "Content-Type: text/plain\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
    "POST /env HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    "GET http://other.test:81/env?q HTTP/1.1\r\nHost: ignored\r\nConnection: close\r\n\r\n",
    "GET http://other.test/env HTTP/1.1\r\nHost: ignored\r\nConnection: close\r\n\r\n",
    "GET /env HTTP/1.1\r\nHost: [::1]:3000\r\nX_Forwarded_For: spoof\r\nX-Forwarded-For: proxy\r\n" \
    "X_Real_Ip: only\r\nConnection: close\r\n\r\n",
    "GET /env HTTP/1.0\r\n\r\n"
  ].freeze

  def test_env_is_the_same_as_up_rubys
    ruby = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", "-t", "1", UpProcess::FEATURES)
    on_ruby = begin
      ENV_REQUESTS.map { |request| raw_request(request, port: ruby.port).body.gsub(ruby.port.to_s, "PORT") }
    ensure
      ruby.stop
    end
    start_up
    ENV_REQUESTS.each_with_index do |request, i|
      on_up = raw_request(request).body.gsub(@port.to_s, "PORT")
      assert_equal JSON.parse(on_ruby[i]), JSON.parse(on_up), request
    end
  end

  def test_post_body_reaches_rack_input_as_binary
    start_up
    body = "h\u00e9llo world".b
    res = raw_request("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: #{body.bytesize}\r\n" \
                      "Connection: close\r\n\r\n#{body}")
    assert_equal "llo world|12|ASCII-8BIT", res.body.split("|", 2).last
  end

  def test_body_kinds
    start_up
    stream = get("/stream")
    assert_equal "chunked", stream["transfer-encoding"]
    assert_equal "part 0\npart 1\npart 2\n", stream.body
    assert_equal "one two", get("/each").body
    file = get("/file")
    assert_equal File.binread(File.join(CLIProcess::ROOT, "examples/hello/config.ru")), file.body
    assert_equal file.body.bytesize.to_s, file["content-length"]
    cookies = get("/cookies")
    assert_equal ["a=1; path=/", "b=2"], cookies.headers["set-cookie"]
    assert_equal "2", get("/closed").body, "the each and to_path bodies were closed"
    res = raw_request("HEAD / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", head: true)
    assert_equal "5", res["content-length"], "HEAD gets GET's length and no body"
  end

  def test_early_hints_go_out_before_the_response
    start_up
    sock = connect
    sock.write("GET /hints HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    hints = read_response(sock, head: true)
    assert_equal 103, hints.status
    assert_equal "</style.css>; rel=preload", hints["link"]
    assert_equal "after hints", read_response(sock).body
  end

  def test_an_app_exception_is_a_logged_500_and_the_server_goes_on
    server = start_up
    res = get("/fail")
    assert_equal 500, res.status
    assert_equal "Internal Server Error", res.body.chomp
    server.wait_for(/error in GET \/fail: .*kaboom from the app/)
    assert_equal 500, get("/bad_part").status
    server.wait_for(%r{invalid response from the app to GET /bad_part})
    assert_equal "hello", get("/").body
  end

  # Opal 1.8 leaves a `return` in a block inside a lambda uncaught: a 500 that says why.
  def test_a_return_escaping_a_lambda_app_is_a_500_that_says_why
    Dir.mktmpdir do |dir|
      rackup = File.join(dir, "config.ru")
      File.write(rackup, <<~RUBY)
        run ->(env) {
          [1].each { return [200, {}, ["from the block"]] } if env["PATH_INFO"] == "/return"
          [200, {}, ["after"]]
        }
      RUBY
      server = start_up(rackup)
      assert_equal 500, get("/return").status
      assert_equal "after", get("/").body
      server.wait_for(%r{error in GET /return: a 'return' in a block escaped the app: Opal 1\.8})
    end
  end

  def test_a_malformed_request_is_a_400_and_the_connection_closes
    start_up
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\nGET /x y HTTP/1.1\r\nHost: h\r\n\r\n")
    assert_equal 200, read_response(sock).status
    res = read_response(sock)
    assert_equal 400, res.status
    assert_equal "close", res["connection"]
    assert closed_by_server?(sock)
    assert_equal 431, raw_request("GET / HTTP/1.1\r\nHost: h\r\nX: #{"a" * 70_000}\r\n\r\n").status
  end

  def test_term_stops_gracefully
    server = start_up
    assert_equal 200, get("/").status
    server.signal("TERM")
    status = server.wait(timeout: 10)
    assert status.success?, "exit status #{status.inspect}"
    assert_match(/up stopped/, server.output)
  end

  def test_two_workers_share_the_listening_socket
    server = start_up("-w", "2", "test/rackup/hello.ru")
    # Both (the output is searched whole, so in either order): a TERM before a worker booted
    # would find it still starting.
    [0, 1].each { |i| server.wait_for(/worker #{i} \(pid \d+\) booted/) }
    20.times { assert_equal "Hello World", get("/").body }
    server.signal("TERM")
    assert server.wait(timeout: 15).success?
    assert_match(/worker 0 stopped/, server.output)
    assert_match(/worker 1 stopped/, server.output)
  end

  def test_a_unix_socket_bind_serves
    path = File.join(Dir.mktmpdir("up-sock"), "up.sock")
    server = CLIProcess.new("-w", "1", "-b", "unix://#{path}", UpProcess::FEATURES,
                            command: [RbConfig.ruby, UpProcess::EXE], env: { "XDG_CACHE_HOME" => UpProcess::CACHE },
                            wait: false)
    (@up_processes ||= []) << server
    server.wait_for(%r{listening on unix://})
    sock = UNIXSocket.new(path)
    (@sockets ||= []) << sock
    sock.write("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    assert_equal "hello", read_response(sock).body
  end

  def test_an_address_in_use_is_one_line_and_status_1
    taken = TCPServer.new("127.0.0.1", 0)
    port = taken.addr[1]
    server = CLIProcess.new("-w", "1", "-b", "127.0.0.1", "-p", port.to_s, UpProcess::FEATURES,
                            command: [RbConfig.ruby, UpProcess::EXE], env: { "XDG_CACHE_HOME" => UpProcess::CACHE },
                            wait: false)
    (@up_processes ||= []) << server
    refute server.wait(timeout: 30).success?
    assert_match(/up: cannot listen on .*127\.0\.0\.1:#{port}.*Address already in use/, server.output)
  ensure
    taken&.close
  end
end
