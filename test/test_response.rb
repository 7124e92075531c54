# frozen_string_literal: true

# How responses go on the wire: framing (RFC 9112 §6), header rules, every body kind of the
# Rack 3.2 SPEC, close called exactly once on every path, rack.response_finished, early hints,
# and app errors becoming 500s while the server keeps serving.
require_relative "helper"
require "rack"
require "rack/lint"
require "tempfile"

class TestResponse < Minitest::Test
  include UpTestHelpers

  # A body that records the calls the server makes on it.
  class ProbeBody
    attr_reader :calls

    def initialize(parts, raise_in_each: false, raise_in_close: false)
      @parts = parts
      @calls = []
      @raise_in_each = raise_in_each
      @raise_in_close = raise_in_close
    end

    def each(&block)
      @calls << :each
      @parts.each(&block)
      raise "boom in each" if @raise_in_each
    end

    def close
      @calls << :close
      raise "boom in close" if @raise_in_close
    end
  end

  def serve(app, **options)
    start_server(app, **options)
  end

  def request(path = "/", method: "GET")
    raw_request("#{method} #{path} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", head: method == "HEAD")
  end

  def test_array_body_gets_computed_content_length
    serve(->(_) { [200, { "content-type" => "text/plain" }, ["ab", "cd", ""]] })
    res = request
    assert_equal "4", res["content-length"]
    assert_equal "abcd", res.body
    assert_nil res["transfer-encoding"]
  end

  def test_each_body_without_length_is_chunked_and_closed_once
    body = ProbeBody.new(%w[one two three])
    serve(->(_) { [200, {}, body] })
    res = request
    assert_equal "chunked", res["transfer-encoding"]
    assert_equal "onetwothree", res.body
    assert_equal %i[each close], body.calls
  end

  def test_empty_parts_never_end_a_chunked_body_early
    serve(->(_) { [200, {}, ProbeBody.new(["a", "", "b"])] })
    assert_equal "ab", request.body
  end

  def test_each_body_on_http10_is_close_delimited
    serve(->(_) { [200, {}, ProbeBody.new(%w[x y])] })
    sock = connect
    sock.write("GET / HTTP/1.0\r\n\r\n")
    res = read_response(sock)
    assert_nil res["transfer-encoding"]
    assert_equal "xy", res.body
  end

  def test_app_content_length_is_used_and_never_exceeded
    serve(->(_) { [200, { "content-length" => "3" }, ProbeBody.new(["abcdef"])] })
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    res = read_response(sock)
    assert_equal "3", res["content-length"]
    assert_equal "abc", res.body
  end

  def test_short_body_for_its_content_length_closes_the_connection
    serve(->(_) { [200, { "content-length" => "10" }, ProbeBody.new(["abc"])] })
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    sock.gets("\r\n\r\n")
    data = sock.read
    assert_includes data, "abc"
    assert closed_by_server?(sock)
  end

  def test_head_sends_no_body_but_closes_body
    body = ProbeBody.new(["abc"])
    serve(->(_) { [200, { "content-length" => "3" }, body] })
    res = request(method: "HEAD")
    assert_equal "3", res["content-length"]
    assert_equal "", res.body
    assert_equal %i[close], body.calls
  end

  # HEAD gets the content-length GET would have (RFC 9110 §9.3.2) also when the Array body
  # comes wrapped: a BodyProxy (what most middleware returns) and Rack::Lint's body both
  # answer to_ary.
  {
    "body_proxy" => ->(_) { [200, { "content-type" => "text/plain" }, Rack::BodyProxy.new(["hello world!"]) {}] },
    "lint_wrapped_app" => Rack::Lint.new(->(_) { [200, { "content-type" => "text/plain" }, ["hello world!"]] })
  }.each do |name, app|
    define_method("test_head_sends_the_content_length_of_get_for_an_array_body_in_a_#{name}") do
      serve(app)
      get = request
      assert_equal "12", get["content-length"], "GET"
      assert_equal "hello world!", get.body
      head = request(method: "HEAD")
      assert_equal 200, head.status
      assert_equal "12", head["content-length"], "HEAD must send the content-length GET sends"
      assert_equal "", head.body
    end
  end

  def test_no_body_statuses_drop_body_and_length
    [204, 304].each do |status|
      body = ProbeBody.new(["nope"])
      serve(->(_) { [status, { "content-length" => "4" }, body] })
      sock = connect
      sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n")
      res = read_response(sock)
      assert_equal status, res.status
      assert_nil res["content-length"]
      assert_nil res["transfer-encoding"]
      assert_equal status, read_response(sock).status, "body bytes leaked into the next response"
      assert_includes body.calls, :close
    end
  end

  def test_array_header_values_are_separate_lines
    serve(->(_) { [200, { "set-cookie" => %w[a=1 b=2] }, ["x"]] })
    res = request
    assert_equal %w[a=1 b=2], res.headers["set-cookie"]
    assert_includes res.raw, "set-cookie: a=1\r\nset-cookie: b=2\r\n"
  end

  def test_rack2_mixed_case_and_newline_joined_headers_are_written_as_valid_lines
    serve(->(_) { [200, { "Content-Type" => "text/plain", "Set-Cookie" => "a=1\nb=2", "Content-Length" => 1 }, ["x"]] })
    res = request
    assert_includes res.raw, "content-type: text/plain\r\n"
    assert_equal %w[a=1 b=2], res.headers["set-cookie"]
    assert_equal "1", res["content-length"]
  end

  def test_rack_prefixed_headers_are_not_sent
    serve(->(_) { [200, { "rack.internal" => "secret", "x-ok" => "1" }, ["x"]] })
    res = request
    refute_includes res.raw, "secret"
    assert_equal "1", res["x-ok"]
  end

  def test_to_path_body_is_sent_from_the_file_and_closed
    file = Tempfile.new("up")
    file.write("file contents " * 1000)
    file.flush
    closed = []
    body = Object.new
    body.define_singleton_method(:to_path) { file.path }
    body.define_singleton_method(:each) { |&_b| raise "each must not be called" }
    body.define_singleton_method(:close) { closed << true }
    serve(->(_) { [200, {}, body] })
    res = request
    assert_equal ("file contents " * 1000).bytesize.to_s, res["content-length"]
    assert_equal "file contents " * 1000, res.body
    assert_equal [true], closed
  ensure
    file&.close!
  end

  def test_streaming_body_gets_a_stream_and_is_chunked
    serve(lambda { |_|
      [200, {}, lambda { |stream|
        stream.write("hello ")
        stream << "streaming "
        stream.flush
        stream.write("world")
        stream.close
      }]
    })
    res = request
    assert_equal "chunked", res["transfer-encoding"]
    assert_equal "hello streaming world", res.body
  end

  def test_large_each_body_is_delivered_whole
    part = "z" * 65_536
    serve(->(_) { [200, {}, ProbeBody.new([part] * 64)] })
    assert_equal 64 * 65_536, request.body.bytesize
  end

  # Large parts are written straight to the socket when it takes them and queued when it does
  # not; small parts between them are queued. A client that reads late fills the socket, so
  # every mix happens, and the bytes must still arrive whole and in order, on both framings,
  # for pipelined requests, inline and with app threads.
  def test_large_and_small_parts_keep_their_order_when_the_client_reads_late
    parts = (0...160).flat_map { |i| [(65 + (i % 26)).chr * (40_000 + i), "<#{i}>"] }
    expected = parts.join
    [0, 2].each do |threads|
      server = start_server(lambda { |env|
        headers = env["PATH_INFO"] == "/length" ? { "content-length" => expected.bytesize.to_s } : {}
        [200, headers, ProbeBody.new(parts)]
      }, threads: threads)
      sock = Socket.new(:INET, :STREAM)
      sock.setsockopt(Socket::SOL_SOCKET, Socket::SO_RCVBUF, 4096) # so the server's socket fills
      sock.connect(Socket.sockaddr_in(@port, "127.0.0.1"))
      (@sockets ||= []) << sock
      sock.write("GET /length HTTP/1.1\r\nHost: h\r\n\r\nGET /chunked HTTP/1.1\r\nHost: h\r\n\r\n")
      sleep 0.3
      first = read_response(sock)
      second = read_response(sock)
      assert_equal expected.bytesize.to_s, first["content-length"], "threads #{threads}"
      assert first.body == expected, "threads #{threads}: content-length body differs"
      assert_equal "chunked", second["transfer-encoding"], "threads #{threads}"
      assert second.body == expected, "threads #{threads}: chunked body differs"
      sock.close
      server.stop
    end
  end

  def test_close_is_called_once_when_the_client_goes_away_mid_body
    closed = Queue.new
    body = Object.new
    body.define_singleton_method(:each) { |&b| 2000.times { b.call("x" * 65_536) } }
    body.define_singleton_method(:close) { closed << :close }
    server = serve(->(env) { [200, {}, env["PATH_INFO"] == "/big" ? body : ["small"]] }, threads: 1)
    sock = connect
    sock.write("GET /big HTTP/1.1\r\nHost: h\r\n\r\n")
    sock.gets("\r\n\r\n")
    sock.read(100_000)
    sock.close
    assert_equal :close, closed.pop
    assert_equal "small", get("/").body # still serving, and close was not called again meanwhile
    assert closed.empty?, "close was called twice"
    refute_match(/ClientDisconnected/, server.log_text)
  end

  def test_app_exception_is_500_logged_and_worker_keeps_serving
    server = serve(lambda { |env|
      raise ArgumentError, "kaboom" if env["PATH_INFO"] == "/fail"

      [200, {}, ["fine"]]
    })
    sock = connect
    sock.write("GET /fail HTTP/1.1\r\nHost: h\r\n\r\n")
    res = read_response(sock)
    assert_equal 500, res.status
    refute_includes res.body, "kaboom"
    sock.write("GET /ok HTTP/1.1\r\nHost: h\r\n\r\n")
    assert_equal "fine", read_response(sock).body
    assert_includes server.log_text, "kaboom"
    assert_includes server.log_text, "test_response.rb"
    refute_match(/\n\n/, server.log_text, "a blank line after the backtrace")
  end

  def test_exception_in_each_before_anything_sent_is_500_and_body_closed
    body = ProbeBody.new([], raise_in_each: true)
    server = serve(->(_) { [200, {}, body] })
    res = request
    assert_equal 500, res.status
    assert_equal %i[each close], body.calls
    assert_includes server.log_text, "boom in each"
  end

  # Each part goes out as it is made, so a later exception can only cut the body short: no
  # last chunk, and the connection closes, so the client cannot take it for a whole body.
  def test_exception_in_each_after_a_part_cuts_the_body_and_closes
    body = ProbeBody.new(["partial"], raise_in_each: true)
    server = serve(->(_) { [200, {}, body] })
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    raw = sock.read
    assert_match(%r{\AHTTP/1\.1 200 OK\r\n}, raw)
    assert_includes raw, "7\r\npartial\r\n"
    refute_includes raw, "0\r\n\r\n"
    assert_equal %i[each close], body.calls
    assert_includes server.log_text, "boom in each"
  end

  def test_exception_in_close_is_logged_once
    body = ProbeBody.new(["x"], raise_in_close: true)
    server = serve(->(_) { [200, {}, body] })
    request
    assert_equal %i[each close], body.calls
    assert_includes server.log_text, "boom in close"
  end

  INVALID = {
    "status as a word" => [->(_) { ["OK", {}, []] }, "status"],
    "status out of range" => [->(_) { [42, {}, []] }, "status"],
    "header name with space" => [->(_) { [200, { "bad name" => "v" }, []] }, "header name"],
    "header value with newline" => [->(_) { [200, { "x" => ["a\r\nb"] }, []] }, "CR, LF or NUL"],
    "header value with NUL" => [->(_) { [200, { "x" => "a\0b" }, []] }, "CR, LF or NUL"],
    "symbol header value" => [->(_) { [200, { "x" => :sym }, []] }, "not a String"],
    "body part not a String" => [->(_) { [200, {}, [1]] }, "not a String"],
    "not a triple" => [->(_) { [200, {}] }, "instead of"],
    "body without each or call" => [->(_) { [200, {}, Object.new] }, "neither each nor call"]
  }.freeze

  INVALID.each do |name, (app, message)|
    define_method("test_invalid_response_#{name.tr(" ", "_")}_is_500") do
      server = serve(app)
      sock = connect
      sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
      res = read_response(sock)
      assert_equal 500, res.status
      assert_includes server.log_text, message
      # The app's mistake, said as such: not a backtrace into UP!'s own files.
      assert_match(%r{\] invalid response from the app to GET /: }, server.log_text)
      refute_match(%r{lib/up/}, server.log_text)
      refute_includes res.raw, "bad name"
    end
  end

  def test_response_finished_runs_in_reverse_after_the_response_with_status
    seen = Queue.new
    serve(lambda { |env|
      env["rack.response_finished"] << ->(_e, status, _h, error) { seen << [:first, status, error] }
      env["rack.response_finished"] << ->(_e, status, _h, error) { seen << [:second, status, error] }
      [201, {}, ["x"]]
    })
    assert_equal 201, request.status
    assert_equal [:second, 201, nil], seen.pop
    assert_equal [:first, 201, nil], seen.pop
  end

  def test_response_finished_gets_the_error_when_the_app_raised
    seen = Queue.new
    serve(lambda { |env|
      env["rack.response_finished"] << ->(_e, _s, _h, error) { seen << error }
      raise "app failed"
    })
    assert_equal 500, request.status
    assert_equal "app failed", seen.pop.message
  end

  def test_early_hints_send_a_103_before_the_response
    serve(lambda { |env|
      env["rack.early_hints"].call("link" => ["</a.css>; rel=preload", "</b.js>; rel=preload"])
      [200, {}, ["done"]]
    })
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    hints = read_response(sock)
    assert_equal 103, hints.status
    assert_equal ["</a.css>; rel=preload", "</b.js>; rel=preload"], hints.headers["link"]
    assert_equal "done", read_response(sock).body
  end

  # Puma's default: an app that sends hints only when the server offers them sends none.
  def test_early_hints_turned_off_leave_them_out_of_the_env
    serve(lambda { |env|
      env["rack.early_hints"]&.call("link" => "</a.css>; rel=preload")
      [200, {}, [env.key?("rack.early_hints").to_s]]
    }, early_hints: false)
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    response = read_response(sock)
    assert_equal [200, "false"], [response.status, response.body]
  end

  def test_early_hints_are_not_sent_to_http10
    serve(lambda { |env|
      env["rack.early_hints"].call("link" => "</a.css>; rel=preload")
      [200, {}, ["done"]]
    })
    sock = connect
    sock.write("GET / HTTP/1.0\r\n\r\n")
    assert_equal 200, read_response(sock).status
  end

  def test_lint_wrapped_app_passes_on_every_body_kind
    bodies = {
      "/array" => -> { ["a"] },
      "/each" => -> { ProbeBody.new(["b"]) },
      "/call" => -> { ->(s) { s.write("c"); s.close } }
    }
    serve(Rack::Lint.new(lambda { |env|
      [200, { "content-type" => "text/plain" }, bodies.fetch(env["PATH_INFO"]).call]
    }))
    assert_equal "a", request("/array").body
    assert_equal "b", request("/each").body
    assert_equal "c", request("/call").body
  end
end
