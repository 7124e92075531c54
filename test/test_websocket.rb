# frozen_string_literal: true

# The upgrade API on up_ruby (docs/websockets.md): rack.upgrade?, a handler's
# callbacks and their guarantees (on_open first and alone, on_message in order and never two
# at once for one connection, on_drained after pending writes, on_shutdown on a stop, on_close
# last), the client's methods, and refused upgrades; over real sockets with a raw WebSocket
# client (test/support/ws_client.rb). The frame-level rules (RFC 6455 §5, §7, §8) are
# test/engine/websocket_test.c's and test_websocket_protocol.rb's.
require_relative "helper"
require_relative "support/ws_client"

class TestWebSocket < Minitest::Test
  include UpTestHelpers

  # Records every callback as [name, ...] in a Queue, and echoes. (on_drained only comes after
  # the app saw pending above 0: this one never looks.)
  class Recorder
    attr_reader :events

    def initialize(events = Queue.new)
      @events = events
    end

    def on_open(client)
      @events << [:open, client.protocol, client.open?, client.pubsub?]
    end

    def on_message(client, data)
      @events << [:message, data, data.encoding]
      client.write(data)
    end

    def on_drained(_client)
      @events << [:drained]
    end

    def on_shutdown(client)
      @events << [:shutdown]
      client.write("goodbye")
    end

    def on_close(client)
      @events << [:close, client.open?]
    end
  end

  def upgrade_app(handler, status: 101, headers: {})
    lambda do |env|
      @seen_upgrade = env["rack.upgrade?"]
      return [200, {}, ["plain"]] unless env["rack.upgrade?"]

      env["rack.upgrade"] = handler
      [status, headers, ["never sent"]]
    end
  end

  def next_event(events, timeout: 5)
    Timeout.timeout(timeout) { events.pop }
  end

  def test_rack_upgrade_p_names_what_a_request_may_become
    seen = Queue.new
    start_server(->(env) { seen << [env.key?("rack.upgrade?"), env["rack.upgrade?"]]; [200, {}, ["ok"]] })
    get("/")
    assert_equal [true, nil], seen.pop, "the key is there, nil on a plain request"
    get("/", headers: { "Accept" => "text/event-stream" })
    assert_equal [true, :sse], seen.pop
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" \
               "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
    assert_equal 200, read_response(sock).status, "not taken: the app's own response"
    assert_equal [true, :websocket], seen.pop
  end

  def test_callbacks_run_in_order_from_open_to_close
    handler = Recorder.new
    start_server(upgrade_app(handler), threads: 4)
    ws = WSClient.open(@port)
    assert_equal [:open, :websocket, true, 0], next_event(handler.events)
    ws.text("héllo")
    ws.binary("\x00\xff".b)
    assert_equal [:message, "héllo", Encoding::UTF_8], next_event(handler.events)
    assert_equal [:message, "\x00\xff".b, Encoding::ASCII_8BIT], next_event(handler.events)
    frame = ws.read_message
    assert_equal [1, "héllo"], [frame.opcode, frame.payload.force_encoding("UTF-8")], "a UTF-8 String goes as text"
    frame = ws.read_message
    assert_equal [2, "\x00\xff".b], [frame.opcode, frame.payload], "a binary String goes as binary"
    ws.close(1000)
    assert_equal 1000, ws.read_message.close_code
    assert_equal [:close, false], next_event(handler.events)
  ensure
    ws&.close_socket
  end

  def test_the_101_carries_the_apps_fields_and_subprotocol
    start_server(upgrade_app(Recorder.new, headers: { "set-cookie" => "a=1", "sec-websocket-protocol" => "chat",
                                                       "content-type" => "text/plain" }))
    ws = WSClient.open(@port, headers: { "Sec-WebSocket-Protocol" => "chat, superchat" })
    head = ws.response_head
    assert_match(/^set-cookie: a=1\r$/, head)
    assert_match(/^sec-websocket-protocol: chat\r$/, head)
    refute_match(/content-type/i, head, "a 101 has no body to type")
  ensure
    ws&.close_socket
  end

  # RFC 6455 §4.2.2: only an offered subprotocol may be chosen (a client fails the
  # connection on another); one the client did not offer is left out and logged.
  def test_a_subprotocol_the_client_did_not_offer_is_left_out
    server = start_server(upgrade_app(Recorder.new, headers: { "sec-websocket-protocol" => "nope" }))
    ws = WSClient.open(@port, headers: { "Sec-WebSocket-Protocol" => "chat" })
    refute_match(/sec-websocket-protocol/i, ws.response_head)
    ws2 = WSClient.open(@port)
    refute_match(/sec-websocket-protocol/i, ws2.response_head, "none offered: none chosen")
    Timeout.timeout(5) { Thread.pass until server.log_text.include?("did not offer") }
  ensure
    [ws, ws2].each { |c| c&.close_socket }
  end

  def test_a_status_of_300_or_more_refuses_the_upgrade
    events = Queue.new
    start_server(upgrade_app(Recorder.new(events), status: 403))
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" \
               "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
    res = read_response(sock)
    assert_equal [403, "never sent"], [res.status, res.body], "the app's response, as it is"
    assert events.empty?, "no callback for a refused upgrade"
  end

  def test_write_takes_strings_only_and_text_must_be_utf8
    results = Queue.new
    handler = Class.new do
      define_method(:on_open) do |client|
        results << (begin; client.write(:symbol); rescue TypeError => e; e.class; end)
        results << (begin; client.write("\xff".dup.force_encoding("UTF-8")); rescue ArgumentError => e; e.class; end)
        results << client.write("é".encode("ISO-8859-1"))
      end
    end.new
    start_server(upgrade_app(handler))
    ws = WSClient.open(@port)
    assert_equal TypeError, results.pop
    assert_equal ArgumentError, results.pop
    assert_equal true, results.pop
    frame = ws.read_message
    assert_equal [1, "é"], [frame.opcode, frame.payload.force_encoding("UTF-8")], "other encodings are sent as UTF-8 text"
  ensure
    ws&.close_socket
  end

  def test_close_from_the_app_and_the_client_after_it
    results = Queue.new
    handler = Class.new do
      define_method(:on_message) do |client, _data|
        client.write("last")
        client.close
        results << [client.write("late"), client.open?, client.pending]
      end
      define_method(:on_close) { |client| results << [:closed, client.open?, client.write("x"), client.pending] }
    end.new
    start_server(upgrade_app(handler))
    ws = WSClient.open(@port)
    ws.text("go")
    assert_equal [false, false, -1], results.pop, "after close: write is false, not open, pending -1"
    assert_equal "last", ws.read_message.payload
    frame = ws.read_message
    assert_equal [8, 1000], [frame.opcode, frame.close_code]
    ws.close(1000)
    assert_equal [:closed, false, false, -1], results.pop
  ensure
    ws&.close_socket
  end

  def test_an_exception_in_a_callback_is_logged_and_the_connection_goes_on
    handler = Class.new do
      def on_message(client, data)
        raise "boom" if data == "raise"

        client.write(data)
      end
    end.new
    server = start_server(upgrade_app(handler))
    ws = WSClient.open(@port)
    ws.text("raise")
    ws.text("after")
    assert_equal "after", ws.read_message.payload
    assert_match(/boom/, server.log_text)
  ensure
    ws&.close_socket
  end

  # Messages of one connection run one at a time, in order, even with threads to spare; a
  # callback that blocks holds up its own connection only.
  def test_one_connection_at_a_time_and_a_blocked_one_holds_up_no_other
    concurrent = Queue.new
    running = Hash.new(0)
    lock = Mutex.new
    handler = Class.new do
      define_method(:on_message) do |client, data|
        n = lock.synchronize { running[client] += 1 }
        concurrent << n
        sleep 1 if data == "block"
        sleep 0.01
        lock.synchronize { running[client] -= 1 }
        client.write(data)
      end
    end.new
    start_server(upgrade_app(handler), threads: 4)
    slow = WSClient.open(@port)
    fast = WSClient.open(@port)
    slow.text("block")
    5.times { |i| slow.text("m#{i}") }
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    fast.text("quick")
    assert_equal "quick", fast.read_message.payload
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0, :<, 0.8, "held up by the other connection"
    assert_equal %w[block m0 m1 m2 m3 m4], Array.new(6) { slow.read_message.payload }, "in order"
    assert_equal [1], Array.new(7) { concurrent.pop }.uniq, "never two at once on one connection"
  ensure
    slow&.close_socket
    fast&.close_socket
  end

  def test_pending_counts_writes_and_on_drained_follows
    results = Queue.new
    handler = Class.new do
      define_method(:on_open) do |client|
        chunk = "x".b * (256 * 1024)
        8.times { client.write(chunk) }
        results << client.pending
      end
      define_method(:on_drained) { |client| results << [:drained, client.pending] }
    end.new
    start_server(upgrade_app(handler))
    ws = WSClient.open(@port)
    assert_operator results.pop, :>, 0, "writes wait for a client that does not read"
    8.times { assert_equal 256 * 1024, ws.read_message.payload.bytesize }
    assert_equal [:drained, 0], Timeout.timeout(5) { results.pop }
  ensure
    ws&.close_socket
  end

  def test_a_stop_calls_on_shutdown_then_closes_with_1001
    handler = Recorder.new
    server = start_server(upgrade_app(handler))
    ws = WSClient.open(@port)
    next_event(handler.events)
    stopper = Thread.new { server.stop }
    assert_equal [:shutdown], next_event(handler.events)
    assert_equal "goodbye", ws.read_message.payload
    assert_equal 1001, ws.read_message.close_code
    ws.close(1001)
    assert_equal [:close, false], next_event(handler.events)
    assert stopper.join(10), "the stop finished"
  ensure
    ws&.close_socket
  end

  def test_handler_swap_closes_the_old_and_opens_the_new
    events = Queue.new
    second = Recorder.new(events)
    first = Class.new do
      define_method(:on_message) { |client, _data| client.handler = second }
      define_method(:on_close) { |_client| events << [:first_closed] }
    end.new
    start_server(upgrade_app(first))
    ws = WSClient.open(@port)
    ws.text("swap")
    assert_equal [:first_closed], next_event(events)
    assert_equal :open, next_event(events).first
    ws.text("to the second")
    assert_equal [:message, "to the second", Encoding::UTF_8], next_event(events)
  ensure
    ws&.close_socket
  end

  def test_timeout_sets_the_ping_interval
    results = Queue.new
    handler = Class.new do
      define_method(:on_open) do |client|
        results << client.timeout
        client.timeout = 1
        results << client.timeout
      end
    end.new
    start_server(upgrade_app(handler), ws_ping: 40)
    ws = WSClient.open(@port)
    assert_equal [40.0, 1.0], [results.pop, results.pop]
    assert_equal 9, ws.read_frame.opcode, "a ping after a second of silence"
  ensure
    ws&.close_socket
  end

  def test_clients_survive_gc_compaction_while_open
    handler = Recorder.new
    start_server(upgrade_app(handler), threads: 2)
    clients = Array.new(5) { WSClient.open(@port) }
    5.times { next_event(handler.events) }
    GC.start
    GC.compact if GC.respond_to?(:compact)
    clients.each_with_index { |ws, i| ws.text("m#{i}") }
    clients.each_with_index { |ws, i| assert_equal "m#{i}", ws.read_message.payload }
  ensure
    clients&.each(&:close_socket)
  end
end
