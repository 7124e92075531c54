# frozen_string_literal: true

# The WebSocket upgrade API on every runtime (docs/websockets.md): rack.upgrade?,
# the 101 with the app's fields and only an offered subprotocol, refused upgrades, the
# handler's callbacks and their order (on_open first, messages in order, on_drained after
# pending was seen, on_shutdown then 1001 on a stop, on_close last), the client's methods
# (write's text and binary, close, open?, pending, handler=, timeout=), and a callback that
# raises or blocks. Over real sockets with the raw client of test/support/ws_client.rb against
# apps/websocket.ru, which reports its callbacks to an /observe WebSocket of the same tag: each
# test tags its connections with its own name, so it hears only its own events, never one that
# an earlier test's connection causes late. The frame-level rules and close codes are
# test_websocket_protocol.rb's.
require_relative "helper"
require_relative "../support/ws_client"
require "json"

class TestConformanceWebSocket < ConformanceTest
  serve "websocket.ru"

  HANDSHAKE = "GET %s HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" \
              "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"

  # A WebSocket to path, its query string this test's tag (apps/websocket.ru).
  def open_ws(path, **options)
    ws = open_websocket(path: "#{path}?#{own_tag}", **options)
    (@websockets ||= []) << ws
    ws
  end

  def teardown
    (@websockets || []).each(&:close_socket)
    super
  end

  # An /observe connection, which hears this test's connections only; #event reads what it is
  # told next.
  def observe
    @observer = open_ws("/observe")
  end

  def event
    frame = @observer.read_message
    raise "the observer was closed" if frame.nil? || frame.opcode == 8

    JSON.parse(frame.payload)
  end

  def hex(bytes)
    bytes.unpack1("H*")
  end

  # Waits for the file at path to match pattern (what an app tells the test outside its frames).
  def wait_for_file(path, pattern, timeout: 10)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    until File.exist?(path) && File.read(path).match?(pattern)
      raise "timed out waiting for #{pattern.inspect} in #{path}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.01
    end
  end

  def test_rack_upgrade_p_names_what_a_request_may_become
    assert_equal "true ", get("/upgrade_p").body, "the key is there, nil on a plain request"
    assert_equal "true sse", get("/upgrade_p", headers: { "Accept" => "text/event-stream" }).body
    sock = connect
    sock.write(format(HANDSHAKE, "/upgrade_p"))
    res = read_response(sock)
    assert_equal [200, "true websocket"], [res.status, res.body], "not taken: the app's own response"
  end

  def test_callbacks_run_in_order_from_open_to_close
    observe
    ws = open_ws("/echo")
    assert_equal ["open", "websocket", true, 0], event
    ws.text("héllo")
    ws.binary("\x00\xff".b)
    assert_equal ["message", hex("héllo".b), "UTF-8"], event
    assert_equal ["message", "00ff", "ASCII-8BIT"], event
    frame = ws.read_message
    assert_equal [1, "héllo"], [frame.opcode, frame.payload.force_encoding("UTF-8")], "a UTF-8 String goes as text"
    frame = ws.read_message
    assert_equal [2, "\x00\xff".b], [frame.opcode, frame.payload], "a binary String goes as binary"
    ws.close(1000)
    assert_equal 1000, ws.read_message.close_code, "the client's close is answered with its code"
    assert_equal ["close", false], event
  end

  def test_messages_are_echoed_in_order
    ws = open_ws("/echo")
    50.times { |i| ws.text("m#{i}") }
    assert_equal Array.new(50) { |i| "m#{i}" }, Array.new(50) { ws.read_message.payload }
  end

  # A handler may answer a callback through respond_to_missing? and method_missing, as a
  # delegator does.
  def test_a_callback_answered_by_method_missing_runs
    ws = open_ws("/missing")
    ws.text("hi")
    assert_equal "forwarded hi", ws.read_message.payload
  end

  def test_the_101_carries_the_apps_fields_and_subprotocol
    ws = open_ws("/fields", headers: { "Sec-WebSocket-Protocol" => "chat, superchat" })
    head = ws.response_head
    assert_match(/^set-cookie: a=1\r$/i, head)
    assert_match(/^sec-websocket-protocol: chat\r$/i, head)
    refute_match(/content-type/i, head, "a 101 has no body to type")
  end

  # RFC 6455 §4.2.2: only an offered subprotocol may be chosen; another is left out and logged.
  def test_a_subprotocol_the_client_did_not_offer_is_left_out
    ws = open_ws("/wrong_protocol", headers: { "Sec-WebSocket-Protocol" => "chat" })
    refute_match(/sec-websocket-protocol/i, ws.response_head)
    ws2 = open_ws("/fields")
    refute_match(/sec-websocket-protocol/i, ws2.response_head, "none offered: none chosen")
    server.wait_for(/did not offer/, timeout: 5)
  end

  def test_a_status_of_300_or_more_refuses_the_upgrade
    observe
    sock = connect
    sock.write(format(HANDSHAKE, "/refuse?#{own_tag}"))
    res = read_response(sock)
    assert_equal [403, "never sent"], [res.status, res.body], "the app's response, as it is"
    ws = open_ws("/echo")
    assert_equal "open", event.first, "no callback came for the refused one before this one's"
    ws.close_socket
  end

  def test_write_takes_strings_and_sends_other_encodings_as_utf8_text
    observe
    ws = open_ws("/types")
    assert_equal ["number", "TypeError"], event
    assert_equal ["latin-1", "true"], event
    assert_equal ["utf-8 bytes", "true"], event
    frame = ws.read_message
    assert_equal [1, "é"], [frame.opcode, frame.payload.force_encoding("UTF-8")], "other encodings go as UTF-8 text"
    frame = ws.read_message
    assert_equal [1, "é".b], [frame.opcode, frame.payload], "bytes tagged UTF-8 go as they are"
  end

  # What another connection does while this test observes (here another test's, opened and
  # dropped as a test's teardown drops its connections) is told to that connection's observers
  # only: the events this test waits for are its own, in order.
  def test_an_observer_hears_only_the_connections_of_its_own_test
    observe
    other = open_websocket(path: "/echo?another-test")
    other.text("not yours")
    assert_equal "not yours", other.read_message.payload
    other.close_socket
    open_ws("/types")
    assert_equal ["number", "TypeError"], event
  end

  def test_write_refuses_text_that_is_not_utf8
    observe
    open_ws("/bad_utf8")
    assert_equal ["bad utf-8", "ArgumentError"], event
  end

  def test_close_from_the_app_and_the_client_after_it
    observe
    ws = open_ws("/close")
    ws.text("go")
    assert_equal ["after close", false, false, -1], event, "after close: write is false, not open, pending -1"
    assert_equal "last", ws.read_message.payload
    frame = ws.read_message
    assert_equal [8, 1000], [frame.opcode, frame.close_code]
    ws.close(1000)
    assert_equal ["closed", false, false, -1], event
  end

  def test_an_exception_in_a_callback_is_logged_and_the_connection_goes_on
    ws = open_ws("/raise")
    ws.text("raise")
    ws.text("after")
    assert_equal "after", ws.read_message.payload
    server.wait_for(/boom from the handler/, timeout: 5)
  end

  def test_pending_counts_writes_and_on_drained_follows
    observe
    ws = open_ws("/pending")
    assert_equal ["pending", true], event, "writes wait for a client that does not read"
    8.times { assert_equal 256 * 1024, ws.read_message.payload.bytesize }
    assert_equal ["drained", 0], event
  end

  def test_handler_swap_closes_the_old_and_opens_the_new
    observe
    ws = open_ws("/swap")
    ws.text("swap")
    assert_equal ["first closed"], event
    assert_equal "open", event.first
    ws.text("to the second")
    assert_equal ["message", hex("to the second"), "UTF-8"], event
  end

  def test_timeout_sets_the_ping_interval
    start_own_server("websocket.ru", "--ws-ping", "40")
    observe
    ws = open_ws("/timeout")
    assert_equal %w[timeout 40.0 1.0], event
    assert_equal 9, ws.read_frame.opcode, "a ping after a second of silence"
  end

  def test_a_stop_calls_on_shutdown_then_closes_with_1001
    own = start_own_server("websocket.ru")
    ws = open_websocket(own.port, path: "/echo")
    ws.text("hello")
    assert_equal "hello", ws.read_message.payload
    own.signal(:TERM)
    assert_equal "goodbye", ws.read_message.payload, "on_shutdown wrote before the close"
    assert_equal 1001, ws.read_message.close_code
    ws.close(1001)
    assert_equal 0, own.wait.exitstatus
  ensure
    ws&.close_socket
  end

  # Callbacks of one connection run one at a time and in order; one that blocks holds up its
  # own connection only (up_ruby runs callbacks on app threads). The blocking callback tells
  # the test through a file when it begins and ends, so the other connection's answer is seen
  # to come while it still blocks.
  def test_a_blocked_callback_holds_up_no_other_connection
    log = File.join(Dir.mktmpdir("up-block"), "block.log")
    slow = open_ws("/block")
    fast = open_ws("/block")
    slow.text("block #{log}")
    3.times { |i| slow.text("m#{i}") }
    wait_for_file(log, /began/)
    fast.text("quick")
    assert_equal "quick", fast.read_message.payload
    assert_equal "began\n", File.read(log), "answered while the other connection's callback blocks"
    assert_equal ["block #{log}", "m0", "m1", "m2"], Array.new(4) { slow.read_message.payload }, "in order"
  ensure
    FileUtils.rm_rf(File.dirname(log)) if log
  end

end
