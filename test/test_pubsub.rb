# frozen_string_literal: true

# Pub/sub on up_ruby in one process (docs/websockets.md, "PubSub" and "Engines"):
# client.subscribe straight to the client (text, binary, event stream) or with a block (run
# in the client's callback order), patterns with Redis' glob rules, replacing and ending
# subscriptions, Up.publish and Up.subscribe, engines told of channels first in and last out,
# and a subscriber that cannot keep up closed with 1008 while the others go on. Over real
# sockets with the raw WebSocket client; the cluster is test_pubsub_cluster.rb's.
require "open3"
require "uri"
require_relative "helper"
require_relative "support/ws_client"

class TestPubSub < Minitest::Test
  include UpTestHelpers

  # /sub?c=CHANNEL[,CHANNEL][&glob=1][&as=binary][&block=1] subscribes; a message
  # "channel:text" publishes text to channel, "unsub channel" unsubscribes.
  class Handler
    def initialize(events)
      @events = events
    end

    def on_open(client)
      params = URI.decode_www_form(client.env["QUERY_STRING"]).to_h
      return unless params["c"]

      opts = { match: params["glob"] ? :glob : nil }
      opts[:as] = :binary if params["as"] == "binary"
      subs = params["c"].split(",").map do |channel|
        if params["block"]
          client.subscribe(channel, **opts) { |ch, message| client.write("block #{ch} #{message}") }
        else
          client.subscribe(channel, **opts)
        end
      end
      @events << [:subscribed, subs.map(&:channel)]
    end

    def on_message(client, data)
      case data
      when /\Aunsub (.*)\z/ then client.unsubscribe(Regexp.last_match(1))
      when /\A(.*?):(.*)\z/m then client.publish(Regexp.last_match(1), Regexp.last_match(2))
      end
    end
  end

  def app(events)
    handler = Handler.new(events)
    lambda do |env|
      return [400, {}, []] unless env["rack.upgrade?"]

      env["rack.upgrade"] = handler
      [101, {}, []]
    end
  end

  def setup
    @events = Queue.new
  end

  def subscriber(query)
    ws = WSClient.open(@port, path: "/sub?#{query}")
    Timeout.timeout(5) { @events.pop }
    ws
  end

  def test_direct_subscribers_get_each_message_once_in_order
    start_server(app(@events))
    text = subscriber("c=news")
    binary = subscriber("c=news&as=binary")
    pattern = subscriber("c=n%3Fws&glob=1")
    other = subscriber("c=other")
    pub = WSClient.open(@port, path: "/pub")
    3.times { |i| pub.text("news:m#{i}") }
    pub.text("nothing:lost")
    pub.text("other:o")
    assert_equal [[1, "m0"], [1, "m1"], [1, "m2"]], Array.new(3) { f = text.read_message; [f.opcode, f.payload] }
    assert_equal [[2, "m0"], [2, "m1"], [2, "m2"]], Array.new(3) { f = binary.read_message; [f.opcode, f.payload] }
    assert_equal %w[m0 m1 m2], Array.new(3) { pattern.read_message.payload }
    assert_equal "o", other.read_message.payload
  ensure
    [text, binary, pattern, other, pub].each { |ws| ws&.close_socket }
  end

  def test_block_subscriptions_run_in_the_clients_order
    start_server(app(@events), threads: 4)
    ws = subscriber("c=room&block=1")
    pub = WSClient.open(@port, path: "/pub")
    pub.text("room:hello")
    assert_equal "block room hello", ws.read_message.payload
  ensure
    [ws, pub].each { |c| c&.close_socket }
  end

  # The client's messages run in order: after "unsub a", its publish to a is not delivered to
  # it, while the one to z that follows is.
  def test_unsubscribe_ends_delivery
    start_server(app(@events))
    ws = subscriber("c=a,z")
    ws.text("a:1")
    assert_equal "1", ws.read_message.payload
    ws.text("unsub a")
    ws.text("a:2")
    ws.text("z:end")
    assert_equal "end", ws.read_message.payload, "nothing from a after the unsubscribe"
  ensure
    ws&.close_socket
  end

  def test_up_publish_and_up_subscribe_reach_the_process
    start_server(app(@events))
    ws = subscriber("c=server")
    got = Queue.new
    sub = Up.subscribe("ser*", match: :glob) { |channel, message| got << [channel, message, message.encoding] }
    assert_equal true, Up.publish("server", "from the app")
    assert_equal "from the app", ws.read_message.payload
    assert_equal ["server", "from the app", Encoding::UTF_8], Timeout.timeout(5) { got.pop }
    Up.publish("server", "\xff\x00".b, false)
    assert_equal ["server", "\xff\x00".b, Encoding::ASCII_8BIT], Timeout.timeout(5) { got.pop }, "bytes that are not UTF-8 stay binary"
    sub.cancel
    refute sub.active?
    assert_raises(TypeError) { Up.publish("server", 42) }
  ensure
    ws&.close_socket
  end

  # An engine hears of each channel once, first in and last out, and carries the publishes.
  class RecordingEngine
    attr_reader :calls

    def initialize
      @calls = Queue.new
    end

    def subscribe(channel, match)
      @calls << [:subscribe, channel, match]
    end

    def unsubscribe(channel, match)
      @calls << [:unsubscribe, channel, match]
    end

    def publish(channel, message)
      @calls << [:publish, channel, message]
      Up.publish(channel, message, false)
    end
  end

  def test_attached_engines_hear_first_in_last_out
    engine = RecordingEngine.new
    Up::PubSub.attach(engine)
    start_server(app(@events))
    a = subscriber("c=chan")
    b = subscriber("c=chan")
    assert_equal [:subscribe, "chan", nil], engine.calls.pop
    a.close(1000)
    a.read_message
    b.close(1000)
    b.read_message
    assert_equal [:unsubscribe, "chan", nil], Timeout.timeout(5) { engine.calls.pop }
    assert engine.calls.empty?, "once each"
    c = subscriber("c=chan")
    engine.calls.pop
    Up.publish("chan", "via the engine", engine)
    assert_equal [:publish, "chan", "via the engine"], engine.calls.pop
    assert_equal "via the engine", c.read_message.payload
  ensure
    Up::PubSub.detach(engine)
    [a, b, c].each { |ws| ws&.close_socket }
  end

  def test_event_stream_subscribers_get_data_events
    start_server(app(@events))
    out = +""
    reader = Thread.new do
      Open3.popen2("curl", "-sS", "-N", "--max-time", "5", "-H", "Accept: text/event-stream",
                   "http://127.0.0.1:#{@port}/sub?c=feed") do |_in, stdout, wait|
        out << stdout.readpartial(4096) until out.include?("data: b\n\n")
        Process.kill("TERM", wait.pid)
      rescue EOFError
        nil
      end
    end
    Timeout.timeout(5) { @events.pop }
    Up.publish("feed", "a\nb")
    reader.join(6)
    assert_includes out, "data: a\ndata: b\n\n"
  end

  # Up::Server#stats (the control endpoint's per worker) counts upgraded connections,
  # subscriptions and messages.
  def test_stats_count_connections_subscriptions_and_messages
    server = start_server(app(@events))
    a = subscriber("c=s1,s2")
    b = subscriber("c=s1")
    a.text("s1:hello")
    assert_equal "hello", a.read_message.payload
    assert_equal "hello", b.read_message.payload
    stats = server.server.stats
    assert_equal 2, stats[:websockets]
    assert_equal 0, stats[:event_streams]
    assert_equal 3, stats[:subscriptions]
    assert_equal 1, stats[:messages_in]
    assert_equal 2, stats[:messages_out], "two deliveries"
    assert_equal 1, stats[:published]
    a.close(1000)
    a.read_message
    Timeout.timeout(5) { Thread.pass until server.server.stats[:websockets] == 1 }
    assert_equal 1, server.server.stats[:subscriptions], "a's ended with it"
  ensure
    [a, b].each { |ws| ws&.close_socket }
  end

  # A subscriber that reads nothing: once the kernel's buffers are full and --ws-max-pending
  # more waits, it gets 1008 behind what it has and is no longer written to; the publisher and
  # the other subscriber never wait for it.
  def test_a_slow_subscriber_is_closed_with_1008
    server = start_server(app(@events), ws_max_pending: 256 * 1024)
    slow = subscriber("c=firehose")
    fast = subscriber("c=firehose")
    payload = "x" * 65_536
    count = 600 # 39 MB: more than loopback sockets hold
    got = 0
    reader = Thread.new { got += 1 while got < count && fast.read_message&.payload == payload }
    # At most 16 messages ahead of the fast one: it never falls behind by the bound.
    count.times do |i|
      Thread.pass while got < i - 16 && reader.alive?
      Up.publish("firehose", payload)
    end
    reader.join(20)
    assert_equal count, got, "the fast subscriber got every message"
    frames = []
    while (f = slow.read_frame)
      frames << f
      break if f.opcode == 8
    end
    assert_equal 1008, frames.last.close_code, "the slow one got 1008 after its backlog"
    assert_operator frames.size, :<, count
    assert_match(/closed a subscriber .* behind on channel firehose/, server.log_text)
    assert_equal 1, server.server.pubsub_stats[:slow_closed]
  ensure
    [slow, fast].each { |ws| ws&.close_socket }
  end
end
