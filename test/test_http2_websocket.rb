# frozen_string_literal: true

# WebSockets on HTTP/2 streams on up_ruby (RFC 8441): the server advertises
# SETTINGS_ENABLE_CONNECT_PROTOCOL, an extended CONNECT with :protocol websocket is the app's
# rack.upgrade? :websocket with SERVER_PROTOCOL HTTP/2, answered 200 (§5: no accept key), and the
# stream's DATA carries the frames both ways (RFC 6455's framing, permessage-deflate as on
# HTTP/1.1). A close is a Close frame then END_STREAM; a RST_STREAM from the client is the app's
# on_close; a stream the client does not read is bounded and closed alone as a slow pub/sub
# subscriber, while the connection's other streams go on. With our own frame client
# (support/h2_websockets.rb); Chromium's WebSocket over h2 is test_browser_sse_http2.rb's.
require "json"
require "uri"
require_relative "helper"
require_relative "support/h2_websockets"
require_relative "support/ws_client"

class TestHTTP2WebSocket < Minitest::Test
  include UpTestHelpers

  # Echoes, says which protocol the app saw, and takes "pub channel text" / "sub channel".
  class Handler
    def initialize(events)
      @events = events
    end

    def on_open(client)
      @events << [:open, client.env["SERVER_PROTOCOL"], client.env["REQUEST_METHOD"], client.env["PATH_INFO"]]
      params = URI.decode_www_form(client.env["QUERY_STRING"].to_s).to_h
      client.subscribe(params["c"]) if params["c"]
      @events << [:subscribed] if params["c"]
      client.write("hello #{client.env["SERVER_PROTOCOL"]}")
    end

    def on_message(client, data)
      case data
      when /\Apub (\S+) (.*)\z/m then client.publish(Regexp.last_match(1), Regexp.last_match(2))
      else client.write(data)
      end
    end

    def on_close(_client)
      @events << [:close]
    end
  end

  # Takes its first message only once the test opens the gate, then counts them all.
  class Stuck
    def initialize(events, gate)
      @events = events
      @gate = gate
    end

    def on_open(client)
      @events << [:open, client.env["SERVER_PROTOCOL"]]
    end

    def on_message(_client, data)
      @gate.pop if @gate
      @gate = nil
      @events << [:message, data.bytesize]
    end
  end

  def app
    handler = Handler.new(@events = Queue.new)
    stuck = Stuck.new(@events, @gate = Queue.new)
    lambda do |env|
      return [200, { "content-type" => "text/plain" }, ["plain #{env["SERVER_PROTOCOL"]}"]] unless env["rack.upgrade?"] == :websocket

      env["rack.upgrade"] = env["PATH_INFO"] == "/stuck" ? stuck : handler
      [200, { "x-app" => "yes" }, []]
    end
  end

  def event
    Timeout.timeout(5) { @events.pop }
  end

  def websockets(**options)
    H2WebSockets.new(connect, **options)
  end

  def test_an_extended_connect_is_a_websocket_on_its_stream
    start_server(app)
    ws = websockets
    assert ws.enable_connect_protocol?, "SETTINGS_ENABLE_CONNECT_PROTOCOL = 1 (RFC 8441 §3)"
    opened = ws.open(1, "/chat")
    assert_equal "200", opened.status
    assert_nil opened.field("sec-websocket-accept"), "no key to answer on HTTP/2 (RFC 8441 §5)"
    assert_equal "yes", opened.field("x-app")
    assert_equal [:open, "HTTP/2", "CONNECT", "/chat"], event
    assert_equal "hello HTTP/2", ws.read_frame(1).payload
    ws.text(1, "héllo")
    frame = ws.read_frame(1)
    assert_equal [1, "héllo"], [frame.opcode, frame.payload.force_encoding(Encoding::UTF_8)]
    ws.binary(1, "\x00\xff".b)
    assert_equal [2, "\x00\xff".b], ws.read_frame(1).then { |f| [f.opcode, f.payload] }
    ws.send_frame(1, :ping, "p1")
    assert_equal [10, "p1"], ws.read_frame(1).then { |f| [f.opcode, f.payload] }
    # Another request on the same connection while the WebSocket is open.
    ws.h2.headers(3, ws.h2.request_fields("/plain"))
    assert_equal "plain HTTP/2", ws.h2.response(3).body
    ws.close(1, 1000)
    frame = ws.read_frame(1)
    assert_equal [8, 1000], [frame.opcode, frame.close_code]
    assert_equal [:end], ws.stream_end(1), "the Close is followed by END_STREAM"
    ws.end_stream(1)
    assert_equal [:close], event
  end

  def test_permessage_deflate_on_a_stream
    start_server(app, ws_deflate: true)
    ws = websockets
    opened = ws.open(1, "/z", deflate: true)
    assert_match(/\Apermessage-deflate/, opened.field("sec-websocket-extensions"))
    event
    assert_equal "hello HTTP/2", ws.read_frame(1).payload
    text = "compressible " * 200
    ws.text(1, text)
    frame = ws.read_frame(1)
    assert frame.rsv1, "compressed back"
    assert_equal text, frame.payload
  end

  def test_a_reset_stream_closes_only_its_websocket
    start_server(app, threads: 2)
    ws = websockets
    ws.open(1, "/a")
    ws.open(3, "/b")
    2.times { event }
    [1, 3].each { |id| assert_equal "hello HTTP/2", ws.read_frame(id).payload }
    ws.reset(1)
    assert_equal [:close], event, "on_close for the reset stream"
    ws.text(3, "still here")
    assert_equal "still here", ws.read_frame(3).payload
  end

  def test_pubsub_across_an_http2_and_an_http1_websocket
    start_server(app)
    ws = websockets
    ws.open(1, "/s?c=room")
    2.times { event }
    assert_equal "hello HTTP/2", ws.read_frame(1).payload
    h1 = WSClient.open(@port, path: "/s?c=room")
    2.times { event }
    assert_equal "hello HTTP/1.1", h1.read_message.payload
    h1.text("pub room from h1")
    assert_equal "from h1", ws.read_frame(1).payload
    assert_equal "from h1", h1.read_message.payload
    ws.text(1, "pub room from h2")
    assert_equal "from h2", h1.read_message.payload
    assert_equal "from h2", ws.read_frame(1).payload
  ensure
    h1&.close_socket
  end

  # The stream the client does not read fills its window, then the bound of output it may
  # hold: as on HTTP/1.1 it gets 1008 behind what it has, while a stream of the same
  # connection gets every message and the connection goes on.
  def test_a_stream_that_does_not_read_is_closed_alone_as_a_slow_subscriber
    server = start_server(app, ws_max_pending: 256 * 1024)
    ws = websockets
    ws.open(1, "/s?c=firehose")
    ws.open(3, "/s?c=firehose")
    4.times { event }
    [1, 3].each { |id| assert_equal "hello HTTP/2", ws.read_frame(id).payload }
    ws.hold(1)
    payload = "x" * 16_384
    count = 100 # 1.6 MB: past the window and the bound
    count.times do |i|
      Up.publish("firehose", payload)
      assert_equal payload, ws.read_frame(3)&.payload, "message #{i} on the stream that reads"
    end
    Timeout.timeout(5) { Thread.pass until server.server.pubsub_stats[:slow_closed] == 1 }
    ws.release(1)
    frames = []
    while (f = ws.read_frame(1))
      frames << f
      break if f.opcode == 8
    end
    assert_equal 1008, frames.last&.close_code, "the slow one got 1008 after its backlog"
    assert_operator frames.size, :<, count
    ws.text(3, "after")
    assert_equal "after", ws.read_frame(3).payload, "the other stream goes on"
  end

  # A client that sends faster than on_message runs: its stream's window reopens only as
  # messages are handed to the app, so it stops at about UP_WS_MAX_INBOUND (1 MiB) plus the
  # stream's window (256 KiB), on that stream alone; once the app catches up, the rest comes.
  def test_a_stream_that_floods_the_app_is_held_by_its_window_alone
    start_server(app, threads: 2)
    ws = websockets
    ws.open(1, "/stuck")
    ws.open(3, "/echo")
    2.times { event }
    assert_equal "hello HTTP/2", ws.read_frame(3).payload
    payload = "f" * 65_536
    total = 64 # 4 MiB
    sent = 0
    sent += 1 while sent < total && ws.send_within_window(1, payload, wait: 1)
    assert_operator sent * payload.bytesize, :<, 2 * 1024 * 1024, "held past about 1.25 MiB"
    assert_operator sent * payload.bytesize, :>=, 1024 * 1024, "the app's share came"
    ws.text(3, "other stream")
    assert_equal "other stream", ws.read_frame(3).payload
    @gate << :go
    sent += 1 while sent < total && ws.send_within_window(1, payload, wait: 5)
    assert_equal total, sent, "the window reopened as the app took the messages"
    got = Array.new(total) { event }
    assert_equal [[:message, 65_536]] * total, got
  end

  # A graceful stop: GOAWAY, and the WebSocket on its stream gets 1001 (the handler has no
  # on_shutdown) then END_STREAM, as on HTTP/1.1.
  def test_a_graceful_stop_closes_the_websocket_with_1001_and_sends_goaway
    server = start_server(app)
    ws = websockets
    ws.open(1, "/a")
    event
    assert_equal "hello HTTP/2", ws.read_frame(1).payload
    stopper = Thread.new { server.stop }
    frame = ws.read_frame(1)
    assert_equal [8, 1001], [frame.opcode, frame.close_code]
    assert_equal [:end], ws.stream_end(1)
    ws.end_stream(1)
    assert_equal [:close], event
    goaway = ws.wait_for_goaway
    refute_nil goaway, "GOAWAY"
    assert_equal 0, goaway.goaway_code
    ws.h2.socket.close # the client is done: the stop need not wait for it
    stopper.join(10)
  end
end
