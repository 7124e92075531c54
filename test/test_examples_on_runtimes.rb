# frozen_string_literal: true

# Each example on each runtime it claims, started as the README's examples table says (the
# same command, another runtime name; one worker, a free loopback port), then asked over real
# sockets: one test per example and runtime, with the same assertions on every runtime. One
# server serves all of a test's requests; each app compiles once a run (RuntimeProcess).
#
# The README's table lists these runtimes per example (a test keeps the two equal); the chat
# runs in a browser, on two workers, in test_browser_chat.rb; the MRI-only examples
# (streaming, json_api, rails) have their own tests.
require_relative "helper"
require_relative "support/runtime_process"
require "json"

class TestExamplesOnRuntimes < Minitest::Test
  include UpTestHelpers

  ALL = Conformance::RUNTIMES.keys.freeze
  # Example => the runtimes it runs on, as the README's examples table says.
  EXAMPLES = {
    "hello" => ALL, "env" => ALL, "roda" => ALL, "sinatra" => ALL, "chat" => ALL,
    "streaming" => %w[up_ruby], "json_api" => %w[up_ruby], "rails" => %w[up_ruby]
  }.freeze
  # The examples this file serves (the others: see the top comment).
  SERVED = %w[hello env roda sinatra].freeze
  README = File.join(CLIProcess::ROOT, "README.md")

  # A cold Sinatra build on a busy machine, with Opal's own cache empty too.
  def time_limit_seconds
    90
  end

  # Starts example on runtime as a user does, with `-w 1`; @port is its port. Stopped in
  # teardown (UpTestHelpers stops @servers).
  def serve(runtime, example)
    server = RuntimeProcess.spawn(runtime, "examples/#{example}/config.ru", "-w", "1")
    (@servers ||= []) << server
    @port = server.wait_listening(timeout: 75)
  end

  SERVED.each do |example|
    EXAMPLES.fetch(example).each do |runtime|
      define_method("test_#{example}_on_#{runtime}") do
        serve(runtime, example)
        send("check_#{example}")
      end
    end
  end

  # The README's examples table has a "runs on" cell per example that names exactly the
  # runtimes of EXAMPLES.
  def test_the_readme_table_says_where_each_example_runs
    rows = File.read(README)[/^## Examples\n.*?(?=^## )/m].scan(/^\| `examples\/(\w+)` \|(.*)\|$/)
    claimed = rows.to_h { |name, cells| [name, cells.split("|")[1].to_s.scan(/`(up(?:_ruby|_node)?)`/).flatten] }
    assert_equal EXAMPLES.transform_values(&:sort), claimed.transform_values(&:sort)
  end

  private

  def check_hello
    sock = connect
    2.times do
      sock.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
      res = read_response(sock)
      assert_equal [200, "text/plain", "12", "Hello World\n"], [res.status, res["content-type"], res["content-length"], res.body]
    end
  end

  def check_env
    body = get("/some/path?x=1", headers: { "X-Custom" => "a" }).body
    ['REQUEST_METHOD = "GET"', 'PATH_INFO = "/some/path"', 'QUERY_STRING = "x=1"', 'REQUEST_URI = "/some/path?x=1"',
     'HTTP_X_CUSTOM = "a"', 'SERVER_NAME = "localhost"', 'rack.url_scheme = "http"'].each do |line|
      assert_includes body.lines(chomp: true), line
    end
    posted = raw_request("POST /form HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n" \
                         "Content-Length: 7\r\nConnection: close\r\n\r\nname=Jo").body
    ['REQUEST_METHOD = "POST"', 'PATH_INFO = "/form"', 'CONTENT_LENGTH = "7"'].each do |line|
      assert_includes posted.lines(chomp: true), line
    end
  end

  def check_roda
    assert_equal "Hello from Roda\n", get("/").body
    assert_equal "Hello, Ada!\n", get("/hello/Ada").body
    assert_equal({ "id" => 3, "name" => "item 3" }, JSON.parse(get("/items/3").body))
    assert_equal "deleted item 5\n", request("DELETE", "/items/5").body
    assert_equal({ "q" => "1", "name" => "Ada", "tags" => ["x y"] }, JSON.parse(form("/params?q=1", "name=Ada&tags[]=x+y").body))
    assert_equal [200, "Nice to meet you, Bob.\n"], form("/greet", "name=Bob").then { |r| [r.status, r.body] }
    assert_equal [422, 403, 404], [form("/greet", "").status, get("/admin").status, get("/nope").status]
    flavour = get("/flavour", headers: { "Cookie" => "flavour=ginger" })
    assert_equal ["flavour=oatmeal; path=/", %(cookie set; you sent "ginger"\n)], [flavour["set-cookie"], flavour.body]
    assert_session("roda.session")
  end

  def check_sinatra
    assert_equal ["Hello, Ada!\n", "sinatra"], get("/hello/Ada").then { |r| [r.body, r["x-served-by"]] }
    page = get("/page/Ada?items=tea,%3Cb%3E").body
    assert_includes page, "<title>UP! on Sinatra</title>", "the layout"
    assert_includes page, "<h1>Hello, Ada</h1>"
    assert_includes page, "<li>&lt;b&gt;</li>", "escaped"
    assert_equal "<p>Inline, 3 times: 0 1 2 </p>", get("/inline").body.strip
    old = get("/old")
    assert_equal [302, "http://localhost/hello/Ada"], [old.status, old["location"]]
    assert_equal [418, "I'm a teapot: short and stout\n"], get("/teapot").then { |r| [r.status, r.body] }
    assert_equal [404, "Nothing at /nope\n"], get("/nope").then { |r| [r.status, r.body] }
    evil = raw_request("GET / HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n")
    assert_equal [403, "Host not permitted"], [evil.status, evil.body], "host authorization"
    assert_session("rack.session")
  end

  # Two POSTs count two visits in the session cookie the first one set; a GET reads it.
  def assert_session(name)
    first = request("POST", "/visits")
    cookie = first["set-cookie"][/\A#{Regexp.escape(name)}=[^;]+/] or flunk "no #{name} in #{first.headers.inspect}"
    again = request("POST", "/visits", "Cookie: #{cookie}\r\n")
    cookie = again["set-cookie"]&.then { |c| c[/\A#{Regexp.escape(name)}=[^;]+/] } || cookie
    read = request("GET", "/visits", "Cookie: #{cookie}\r\n")
    assert_equal [%({"visits":1}), %({"visits":2}), %({"visits":2})], [first, again, read].map(&:body)
  end

  def request(method, path, lines = "")
    length = method == "GET" ? "" : "Content-Length: 0\r\n"
    raw_request("#{method} #{path} HTTP/1.1\r\nHost: localhost\r\n#{lines}#{length}Connection: close\r\n\r\n")
  end

  def form(path, body)
    raw_request("POST #{path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/x-www-form-urlencoded\r\n" \
                "Content-Length: #{body.bytesize}\r\nConnection: close\r\n\r\n#{body}")
  end
end
