# frozen_string_literal: true

# examples/chat's server side with the raw WebSocket client: its files and their headers, the
# WebSocket refused to plain requests and to another site's page (RFC 6455 §10.2), and the
# room's protocol (a name first, then lines of chat; names and lines checked; join, say and
# leave reach every member as JSON; a stop says bye). Each test runs in one process under
# Rack::Lint (its name ends in _under_lint), and on each runtime as a user starts it, with
# one worker (_on_up_ruby, _on_up_node, _on_up): the same assertions. The page in a browser,
# on two workers: test_browser_chat.rb.
require "json"
require "rack"
require "rack/lint"
require_relative "helper"
require_relative "support/runtime_process"
require_relative "support/ws_client"

class TestExampleChat < Minitest::Test
  include UpTestHelpers

  APP = "examples/chat/config.ru"

  # Defines test_NAME_under_lint and test_NAME_on_RUNTIME for each runtime, running the block
  # against a chat served that way.
  def self.on_each_runtime(name, &block)
    define_method("test_#{name}_under_lint") do
      serve_under_lint
      instance_exec(&block)
    end
    Conformance::RUNTIMES.each_key do |runtime|
      define_method("test_#{name}_on_#{runtime}") do
        serve_on(runtime)
        instance_exec(&block)
      end
    end
  end

  def setup
    @members = []
  end

  def teardown
    @members.each(&:close_socket)
    super
  end

  # In this process under Rack::Lint: the hello names this process.
  def serve_under_lint
    app = Rack::Builder.parse_file(File.expand_path("../#{APP}", __dir__))
    @server = start_server(Rack::Lint.new(app), threads: 2)
    @worker = Process.pid
  end

  # As a user starts it, with one worker: a single process, the one the hello names.
  def serve_on(runtime)
    @server = RuntimeProcess.spawn(runtime, APP, "-w", "1")
    (@servers ||= []) << @server
    @port = @server.wait_listening(timeout: 45)
    @worker = @server.pid
  end

  # A member's socket, past the server's hello.
  def member(headers: {})
    ws = WSClient.open(@port, path: "/chat", headers: headers)
    @members << ws
    assert_equal({ "type" => "hello", "worker" => @worker }, receive(ws))
    ws
  end

  # The welcome is written to the member and the join published to the room: the two take
  # different ways to the socket (the connection's mail, the loop's publish task), and either
  # may come first.
  def joined(name)
    ws = member
    ws.text(name)
    assert_equal [{ "type" => "join", "name" => name }, { "type" => "welcome", "name" => name }],
                 Array.new(2) { receive(ws) }.sort_by { |m| m["type"] }
    ws
  end

  def receive(ws)
    frame = ws.read_message
    assert frame.text?, "the room speaks in text frames"
    JSON.parse(frame.payload)
  end

  on_each_runtime("serves_the_page_and_its_files_with_a_strict_policy") do
    {
      "/" => "text/html; charset=utf-8", "/chat.js" => "text/javascript; charset=utf-8",
      "/chat.css" => "text/css; charset=utf-8", "/favicon.svg" => "image/svg+xml"
    }.each do |path, type|
      res = get(path)
      assert_equal [200, type], [res.status, res["content-type"]], path
      assert_match(/\Adefault-src 'self';/, res["content-security-policy"], path)
      assert_equal "nosniff", res["x-content-type-options"], path
    end
    assert_includes get("/").body, %(<script src="/chat.js" defer></script>)
    assert_equal 404, get("/nothing").status
    res = raw_request("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    assert_equal [405, "GET, HEAD"], [res.status, res["allow"]]
  end

  on_each_runtime("the_websocket_is_refused_to_plain_requests_and_other_sites") do
    assert_equal 400, get("/chat").status
    sock = connect
    sock.write("GET /chat HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" \
               "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" \
               "Origin: http://evil.example\r\n\r\n")
    assert_equal 403, read_response(sock).status
    member(headers: { "Origin" => "http://localhost" })
  end

  on_each_runtime("members_hear_joins_lines_and_leaves_in_order") do
    ada = joined("Ada")
    bob = joined("Bob")
    assert_equal({ "type" => "join", "name" => "Bob" }, receive(ada))
    ada.text("  hi <b>Bob</b>  ")
    said = { "type" => "say", "name" => "Ada", "text" => "hi <b>Bob</b>" }
    assert_equal [said, said], [receive(ada), receive(bob)], "trimmed, and sent as it was written"
    bob.close(1000)
    assert_equal 1000, bob.read_message.close_code
    bob.close_socket # as a browser does once the server's close came (else on_close waits for it)
    assert_equal({ "type" => "leave", "name" => "Bob" }, receive(ada))
  end

  on_each_runtime("names_and_lines_are_checked") do
    ws = member
    ["", " ", "x" * 33, "tab\tname", "del\u007F", "nel\u0085"].each do |name|
      ws.text(name)
      assert_equal "refused", receive(ws)["type"], name.inspect
    end
    ws.binary("Ada".b)
    assert_equal "refused", receive(ws)["type"], "a name is text"
    ws.text("#{"é" * 29} :]")
    assert_equal %w[join welcome], Array.new(2) { receive(ws)["type"] }.sort, "32 characters, not bytes, none a control"
    ["   ", "x" * 501].each do |line|
      ws.text(line)
      assert_equal({ "type" => "refused", "text" => "A message is 1 to 500 characters." }, receive(ws))
    end
    ws.text("x" * 500)
    assert_equal "x" * 500, receive(ws)["text"]
  end

  on_each_runtime("members_hear_bye_when_the_server_stops") do
    ws = joined("Ada")
    stopping = Thread.new { @server.stop }
    assert_equal({ "type" => "bye", "text" => "The server is stopping." }, receive(ws))
    assert_equal 1001, ws.read_message.close_code, "going away (RFC 6455 §7.4.1)"
    ws.close_socket
    assert stopping.join(10), "the server stopped"
  end
end
