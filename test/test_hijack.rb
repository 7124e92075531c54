# frozen_string_literal: true

# rack.hijack on up_ruby (Rack 3.2 SPEC, "Hijacking"), and Rack 3's upgrade by a 101 with a
# callable body, over real sockets:
# - full hijack: the app gets the socket as an IO and speaks on it after its call returned;
#   the server writes nothing, ignores the response and closes its body; the bytes the client
#   pipelined after the request are the app's; the connection leaves the server's count;
# - partial hijack: the server writes the head without framing and never reuses the connection,
#   then the callable gets the socket;
# - 101 + callable body: the app's 101 head (connection: upgrade kept), then body.call(socket)
#   with a two-way stream;
# - real WebSocket stacks on each path: websocket-driver (what Action Cable and faye-websocket
#   run on) over a full hijack, and async-websocket's Rack adapter (its 101 + callable body
#   under Rack 3, its partial hijack under Rack 2), all driven by async-websocket's own client.
require_relative "helper"
require_relative "support/deadline_reads"
require "async"
require "async/http/endpoint"
require "async/websocket/adapters/rack"
require "async/websocket/client"
require "protocol/rack/adapter/rack2"
require "rack/lint"
require "websocket/driver"

class TestHijack < Minitest::Test
  include UpTestHelpers
  include DeadlineReads

  READ_DEADLINE = 5

  # A body that records its close: the SPEC wants it closed even when it is ignored.
  class ProbeBody
    attr_reader :closed

    def each; end

    def close
      @closed = true
    end
  end

  # ------------------------------------------------------------ full hijack

  # Echoes lines on the raw socket from a thread of its own, after the app call returned.
  def line_echo_app(calls)
    lambda do |env|
      io = env["rack.hijack"].call
      call = { io: io, same_io: env["rack.hijack"].call.equal?(io), hijack_io: env["rack.hijack_io"],
               body: ProbeBody.new }
      calls << call
      Thread.new do
        io.write("HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n")
        while (line = io.gets)
          io.write("echo: #{line}")
        end
      ensure
        io.close
      end
      [200, { "content-length" => "9" }, call[:body]]
    end
  end

  def test_full_hijack_gives_the_app_the_socket_and_ignores_its_response
    calls = Queue.new
    server = start_server(line_echo_app(calls))
    sock = connect
    # "early" follows the request at once: it came on the socket the app takes, so it is the app's.
    sock.write("GET /echo HTTP/1.1\r\nHost: h\r\n\r\nearly\n")
    raw = +""
    assert read_until(sock, raw, "echo: early\n", READ_DEADLINE), "the app did not get the pipelined line: #{raw.inspect}"
    call = calls.pop
    assert_kind_of IO, call[:io]
    assert call[:same_io], "a second call returns the same IO"
    assert_same call[:io], call[:hijack_io], "env['rack.hijack_io'] is set for Rack 2 apps"
    assert wait_for { call[:body].closed }, "the ignored body was not closed"
    assert wait_for { server.server.stats[:connections].zero? }, "a hijacked connection still counts: #{server.server.stats}"

    sock.write("second\n")
    assert read_until(sock, raw, "echo: second\n", READ_DEADLINE), raw
    sock.close_write
    read_until_eof(sock, raw, READ_DEADLINE)
    assert_equal "HTTP/1.1 200 OK\r\nconnection: close\r\n\r\necho: early\necho: second\n", raw,
                 "only the app wrote: no head, length or body of the server's"
  end

  def test_full_hijack_under_rack_lint
    calls = Queue.new
    start_server(Rack::Lint.new(line_echo_app(calls)))
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\nlint\n")
    raw = +""
    assert read_until(sock, raw, "echo: lint\n", READ_DEADLINE), raw
  end

  # The env and the IO the hijack callable holds are marked and follow a compaction.
  def test_hijack_survives_gc_compaction
    start_server(lambda do |env|
      io = env["rack.hijack"].call
      GC.compact
      again = env["rack.hijack"].call
      again.write("HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n#{again.equal?(io)} #{env["rack.hijack_io"].equal?(io)}")
      again.close
      [200, {}, []]
    end)
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    raw = +""
    read_until_eof(sock, raw, READ_DEADLINE)
    assert raw.end_with?("\r\n\r\ntrue true"), raw
  end

  def test_rack_hijack_refuses_once_the_request_is_over
    kept = Queue.new
    start_server(lambda do |env|
      kept << env["rack.hijack"]
      [200, {}, ["ok"]]
    end)
    assert_equal "ok", get("/").body
    error = assert_raises(IOError) { kept.pop.call }
    assert_match(/after the request was over/, error.message)
  end

  def test_rack_hijack_refuses_once_the_response_began
    errors = Queue.new
    body = Class.new do
      define_method(:initialize) { |env| @env = env }
      define_method(:each) do |&block|
        block.call("part\n")
        begin
          @env["rack.hijack"].call
        rescue IOError => e
          errors << e
        end
      end
    end
    start_server(->(env) { [200, {}, body.new(env)] })
    res = get("/")
    assert_equal [200, "part\n"], [res.status, res.body]
    assert_match(/after the response began/, errors.pop.message)
  end

  # ------------------------------------------------------------ partial hijack

  def test_partial_hijack_writes_the_head_then_hands_the_socket_to_the_callable
    seen = Queue.new
    body = ProbeBody.new
    start_server(lambda do |_env|
      callable = lambda do |stream|
        seen << stream
        stream.write("hello ")
        stream.write(stream.gets) # the client speaks after reading the head
        stream.close
      end
      [200, { "content-type" => "text/plain", "rack.hijack" => callable }, body]
    end)
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    raw = +""
    assert read_until(sock, raw, "\r\n\r\n", READ_DEADLINE), raw
    head = raw[0, raw.index("\r\n\r\n") + 4]
    assert_match(%r{\AHTTP/1\.1 200 OK\r\n}, head)
    assert_includes head, "content-type: text/plain\r\n"
    assert_includes head, "connection: close\r\n", "a hijacked connection is never reused"
    refute_match(/content-length|transfer-encoding|rack\.hijack/i, head, "no framing, no rack. header")
    sock.write("world\n")
    read_until_eof(sock, raw, READ_DEADLINE)
    assert_equal "#{head}hello world\n", raw
    assert_kind_of IO, seen.pop
    assert wait_for { body.closed }, "the ignored body was closed"
  end

  def test_partial_hijack_callable_that_raises_is_logged_and_its_socket_closed
    server = start_server(->(_env) { [200, { "rack.hijack" => ->(_stream) { raise "broken callable" } }, []] })
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    raw = +""
    read_until_eof(sock, raw, READ_DEADLINE)
    assert_match(%r{\AHTTP/1\.1 200 OK\r\n.*\r\n\r\n\z}m, raw, "the head, then the close")
    assert wait_for { server.log_text.include?("broken callable") }, server.log_text
  end

  # ------------------------------------------------------------ 101 + callable body

  def test_101_with_a_callable_body_streams_both_ways_after_the_head
    start_server(lambda do |_env|
      body = lambda do |stream|
        while (line = stream.gets)
          stream.write("got #{line}")
        end
        stream.close
      end
      [101, { "upgrade" => "lines", "connection" => "upgrade", "set-cookie" => "a=1" }, body]
    end)
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\nUpgrade: lines\r\nConnection: upgrade\r\n\r\none\n")
    raw = +""
    assert read_until(sock, raw, "got one\n", READ_DEADLINE), raw
    assert_equal "HTTP/1.1 101 Switching Protocols\r\nupgrade: lines\r\nconnection: upgrade\r\n" \
                 "set-cookie: a=1\r\n\r\ngot one\n", raw
    sock.write("two\n")
    assert read_until(sock, raw, "got two\n", READ_DEADLINE), raw
    sock.close_write
    read_until_eof(sock, raw, READ_DEADLINE)
    assert raw.end_with?("got two\n")
  end

  def test_101_with_an_enumerable_body_is_still_refused
    server = start_server(->(_env) { [101, { "upgrade" => "x", "connection" => "upgrade" }, []] })
    assert_equal 500, get("/").status
    assert_match(/invalid response status 101/, server.log_text)
  end

  # ------------------------------------------------------------ WebSocket stacks

  # websocket-driver over a full hijack, as Action Cable and faye-websocket use it: the app
  # answers the handshake itself on the socket and reads it on its own thread.
  class DriverEcho
    Socket = Struct.new(:env, :url, :io) do
      def write(data)
        io.write(data)
      end
    end

    def call(env)
      return [404, {}, []] unless WebSocket::Driver.websocket?(env)

      io = env["rack.hijack"].call
      driver = WebSocket::Driver.rack(Socket.new(env, "ws://#{env["HTTP_HOST"]}#{env["REQUEST_URI"]}", io))
      driver.on(:message) { |event| driver.text("driver: #{event.data}") }
      driver.on(:close) { io.close }
      driver.start
      Thread.new do
        driver.parse(io.readpartial(4096)) until io.closed?
      rescue EOFError, IOError
        io.close
      end
      [-1, {}, []]
    end
  end

  # async-websocket's own Rack adapter: Rack 3 gets its 101 with a callable body (as under Puma
  # and Falcon); with rack2: true, the Rack 2 form of the same response, a partial hijack.
  def async_websocket_app(rack2: false)
    lambda do |env|
      response = Async::WebSocket::Adapters::HTTP.open(Protocol::Rack::Request[env]) do |connection|
        while (message = connection.read)
          connection.write("async: #{message.to_str}")
          connection.flush
        end
      end
      next [404, {}, []] unless response

      (rack2 ? Protocol::Rack::Adapter::Rack2 : Protocol::Rack::Adapter).make_response(env, response)
    end
  end

  # Sends each message with async-websocket's client and returns the replies.
  def async_client_round_trip(messages)
    Sync do
      endpoint = Async::HTTP::Endpoint.parse("http://127.0.0.1:#{@port}/ws")
      Async::WebSocket::Client.connect(endpoint) do |connection|
        replies = messages.map do |message|
          connection.write(message)
          connection.flush
          connection.read.to_str
        end
        connection.close
        replies
      end
    end
  end

  def test_websocket_driver_over_full_hijack_with_async_websockets_client
    server = start_server(DriverEcho.new, threads: 2)
    assert_equal ["driver: one", "driver: #{"x" * 70_000}"], async_client_round_trip(["one", "x" * 70_000])
    assert wait_for { server.server.stats[:connections].zero? }
  end

  def test_async_websocket_rack_adapter_101_callable_body_with_its_client
    start_server(async_websocket_app, threads: 2)
    assert_equal ["async: one", "async: two"], async_client_round_trip(%w[one two])
  end

  def test_async_websocket_rack2_adapter_partial_hijack_with_its_client
    start_server(async_websocket_app(rack2: true), threads: 2)
    assert_equal ["async: one", "async: two"], async_client_round_trip(%w[one two])
  end

  def test_many_hijacked_connections_leave_no_descriptor_behind
    start_server(DriverEcho.new, threads: 2)
    async_client_round_trip(["warm up"])
    before = open_fds
    10.times { async_client_round_trip(["again"]) }
    assert wait_for { open_fds <= before }, "descriptors: #{before} before, #{open_fds} after"
  end

  private

  def open_fds
    Dir.children("/proc/self/fd").size
  end

  def wait_for(seconds = READ_DEADLINE)
    deadline = monotonic_now + seconds
    until (ok = yield)
      return false if monotonic_now > deadline

      sleep 0.01
    end
    ok
  end
end
