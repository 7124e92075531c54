# frozen_string_literal: true

# Pub/sub in one process on every runtime (docs/websockets.md, "PubSub" and
# "Engines"), against apps/pubsub.ru over real sockets: client.subscribe straight to the
# client (text, binary, event stream) or with a block, patterns with Redis' glob rules (the
# table of test/engine/pubsub_test.c, played through subscriptions), unsubscribing,
# Up.publish (everywhere, or this process only) and Up.subscribe, an attached engine told of
# a channel first in and last out and carrying a publish, and a subscriber that cannot keep
# up closed with 1008 while the others go on. The cluster is test_pubsub_cluster.rb's.
require_relative "helper"
require_relative "../support/ws_client"
require "json"

class TestConformancePubSub < ConformanceTest
  serve "pubsub.ru"

  # A WebSocket to /sub?query, once its subscriptions are in place.
  def subscriber(query, port: @port, **options)
    ws = open_websocket(port, path: "/sub?#{query}", **options)
    (@websockets ||= []) << ws
    assert_match(/\Asubscribed \d+\z/, ws.read_message.payload)
    ws
  end

  def teardown
    (@websockets || []).each(&:close_socket)
    super
  end

  def test_direct_subscribers_get_each_message_once_in_order
    text = subscriber("c=news")
    binary = subscriber("c=news&as=binary")
    pattern = subscriber("c=n%3Fws&glob=1")
    other = subscriber("c=other")
    pub = subscriber("")
    3.times { |i| pub.text("news:m#{i}") }
    pub.text("nothing:lost")
    pub.text("other:o")
    assert_equal [[1, "m0"], [1, "m1"], [1, "m2"]], Array.new(3) { f = text.read_message; [f.opcode, f.payload] }
    assert_equal [[2, "m0"], [2, "m1"], [2, "m2"]], Array.new(3) { f = binary.read_message; [f.opcode, f.payload] }
    assert_equal %w[m0 m1 m2], Array.new(3) { pattern.read_message.payload }
    assert_equal "o", other.read_message.payload
  end

  def test_block_subscriptions_run_on_the_clients_callbacks
    ws = subscriber("c=room&block=1")
    pub = subscriber("")
    pub.text("room:hello")
    assert_equal "block room hello", ws.read_message.payload
  end

  # A client's messages run in order: after "unsub a", its publish to a does not come back to
  # it, while the one to z after it does.
  def test_unsubscribe_ends_delivery
    ws = subscriber("c=a,z")
    ws.text("a:1")
    assert_equal "1", ws.read_message.payload
    ws.text("unsub a")
    ws.text("a:2")
    ws.text("z:end")
    assert_equal "end", ws.read_message.payload, "nothing from a after the unsubscribe"
  end

  def test_subscribing_again_replaces_the_subscription
    ws = subscriber("c=dup,dup&block=1")
    ws.text("dup:once")
    assert_equal "block dup once", ws.read_message.payload
    ws.text("dup:twice")
    assert_equal "block dup twice", ws.read_message.payload, "one subscription, not two"
  end

  def test_up_publish_and_up_subscribe_reach_the_process
    ws = subscriber("c=server")
    ws.text("serversub ser*")
    assert_equal "server subscribed", ws.read_message.payload
    ws.text("local server:from the app")
    got = Array.new(2) { ws.read_message.payload }.sort
    assert_equal ["from the app", "server server #{"from the app".unpack1("H*")} UTF-8"], got
    ws.text("bytes server")
    got = Array.new(2) { f = ws.read_message; [f.opcode, f.payload] }.sort
    assert_equal [[1, "server server ff00 ASCII-8BIT".b], [2, "\xff\x00".b]], got,
                 "bytes that are not UTF-8 stay binary, and go to a text subscriber as a binary frame"
    ws.text("serverend")
    assert_equal "active false", ws.read_message.payload
    ws.text("local server:after")
    assert_equal "after", ws.read_message.payload, "the cancelled subscription got nothing"
  end

  def test_event_stream_subscribers_get_data_events
    sock = connect
    sock.write("GET /sub?c=feed HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\n\r\n")
    out = read_stream(sock, "data: subscribed")
    assert_match(/data: subscribed \d+\n\n\z/, out)
    pub = subscriber("")
    pub.text("feed:a\nb")
    assert_equal "data: a\ndata: b\n\n", read_stream(sock, "data: b\n\n")
  end

  # Redis' PSUBSCRIBE rules, the rows of up_glob_match's table: each pattern subscribed with a
  # block, each string published, and every pattern that got it reported. A last publish
  # marks the end: a client's blocks run in publish order.
  def test_patterns_follow_the_glob_table
    cases = glob_table
    ws = subscriber("")
    cases.map(&:first).uniq.each { |pattern| ws.text(JSON.generate(["sub", pattern])) }
    strings = cases.map { |c| c[1] }.uniq
    strings.each { |string| ws.text(JSON.generate(["pub", string])) }
    marker = "end-of-table"
    ws.text(JSON.generate(["sub", marker]))
    ws.text(JSON.generate(["pub", marker]))
    got = []
    loop do
      _, pattern, channel = JSON.parse(ws.read_message.payload)
      break if channel == marker

      got << [pattern, channel]
    end
    wrong = cases.reject { |pattern, string, matches| got.include?([pattern, string]) == matches }
    assert_empty wrong.map { |pattern, string, matches| "#{pattern.inspect} ~ #{string.inspect} should be #{matches}" }
  end

  def test_an_attached_engine_hears_first_in_last_out_and_carries_publishes
    log = File.join(Dir.mktmpdir("up-engine"), "engine.log")
    own = start_own_server("pubsub.ru", env: { "UP_TEST_ENGINE_LOG" => log })
    a = subscriber("c=chan")
    b = subscriber("c=chan")
    wait_for_file(log, /subscribe chan nil/)
    a.close(1000)
    a.read_message
    b.close(1000)
    b.read_message
    wait_for_file(log, /unsubscribe chan nil/)
    c = subscriber("c=chan")
    c.text("engine chan:via the engine")
    assert_equal "via the engine", c.read_message.payload
    lines = File.readlines(log, chomp: true).map { |l| l.sub(/ \d+\z/, "") }
    assert_equal ["subscribe chan nil", "unsubscribe chan nil", "subscribe chan nil", "publish chan via the engine"], lines,
                 "once each, first in and last out (server #{own.pid})"
  end

  # A subscriber that reads nothing: once the kernel's buffers are full and --ws-max-pending
  # more waits, it gets 1008 behind what it has and is written no more; the publisher and the
  # other subscriber never wait for it.
  def test_a_slow_subscriber_is_closed_with_1008
    own = start_own_server("pubsub.ru", "--ws-max-pending", "262144")
    slow = subscriber("c=firehose", receive_buffer: 65_536)
    fast = subscriber("c=firehose")
    pub = subscriber("")
    payload = "x" * 65_536
    # 13 MB: more than the slow one's fixed receive buffer, the server's send buffer (at most
    # net.core.wmem_max, 4 MB by default) and --ws-max-pending together.
    count = 200
    got = 0
    reader = Thread.new { got += 1 while got < count && fast.read_message&.payload == payload }
    count.times do |i|
      Thread.pass while got < i - 16 && reader.alive?
      pub.text("firehose:#{payload}")
    end
    reader.join(30)
    assert_equal count, got, "the fast subscriber got every message"
    frames = []
    while (f = slow.read_frame)
      frames << f
      break if f.opcode == 8
    end
    assert_equal 1008, frames.last.close_code, "the slow one got 1008 after its backlog"
    assert_operator frames.size, :<, count
    own.wait_for(/closed a subscriber .* behind on channel firehose/, timeout: 5)
  end

  private

  # The glob table of the engine's tests (test/test_up_node_glob.rb reads it the same way).
  def glob_table
    table = File.read(File.join(Conformance::ROOT, "test/engine/pubsub_test.c"))[/glob_case_t globs\[\] = \{\n(.*?)\n\};/m, 1]
    literal = /"((?:[^"\\]|\\.)*)"/
    table.scan(/\{#{literal}, #{literal}, ([01])\}/).map do |pattern, string, matched|
      [pattern.gsub(/\\(.)/, '\1'), string.gsub(/\\(.)/, '\1'), matched == "1"]
    end
  end

  def read_stream(sock, marker, timeout: 5)
    out = +"".b
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    until out.include?(marker)
      left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      break if left <= 0 || !sock.wait_readable(left)

      chunk = sock.read_nonblock(65_536, exception: false)
      break if chunk.nil?

      out << chunk unless chunk == :wait_readable
    end
    out.split("\r\n\r\n", 2).last
  end

  def wait_for_file(path, pattern, timeout: 10)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    until File.exist?(path) && File.read(path).match?(pattern)
      raise "timed out waiting for #{pattern.inspect} in #{path}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.02
    end
  end
end
