# frozen_string_literal: true

# Up::PubSub::Redis, the engine that carries pub/sub between servers through Redis. The wire
# tests start a real redis-server per test (test/support/redis_server.rb), and each engine
# plays one UP! server: its deliver callable fills an inbox, as the master's fan-out would.
# To know that nothing more will arrive, a test publishes a marker from another engine after
# the messages under test were answered by Redis: Redis executes PUBLISHes one at a time, so
# everything before the marker has been delivered when the marker is. Redis is killed and
# restarted on the same port for reconnection, and stopped (SIGSTOP) to look wedged.
# Address (the URL) and EchoFilter (the dedup rule) are tested on their own first.
require_relative "helper"
require_relative "support/redis_server"
require_relative "support/node_redis_engine"
require "up/pub_sub/redis"
require "tmpdir"
require "fileutils"

class TestPubSubRedisAddress < Minitest::Test
  Address = Up::PubSub::Redis::Address

  def time_limit_seconds
    10
  end

  # url, then [host, port, path, username, password, to_s] or the start of the error
  CASES = [
    ["redis://localhost", ["localhost", 6379, nil, nil, nil, "redis://localhost:6379"]],
    ["redis://127.0.0.1:7000/3", ["127.0.0.1", 7000, nil, nil, nil, "redis://127.0.0.1:7000"]],
    ["redis://h/", ["h", 6379, nil, nil, nil, "redis://h:6379"]],
    ["redis://:p%40ss+w@h:1", ["h", 1, nil, nil, "p@ss+w", "redis://:***@h:1"]],
    ["redis://user:pw@h", ["h", 6379, nil, "user", "pw", "redis://user:***@h:6379"]],
    ["redis://[::1]:6380", ["::1", 6380, nil, nil, nil, "redis://[::1]:6380"]],
    ["unix:///tmp/redis.sock", [nil, nil, "/tmp/redis.sock", nil, nil, "unix:///tmp/redis.sock"]],
    ["redis+unix:///tmp/redis.sock", [nil, nil, "/tmp/redis.sock", nil, nil, "unix:///tmp/redis.sock"]],
    ["rediss://h", "Redis URL \"rediss://h\": TLS"],
    ["http://h", "Redis URL \"http://h\": the scheme"],
    ["redis://", "Redis URL \"redis://\": no host"],
    ["redis://h/db", "Redis URL \"redis://h/db\": the path"],
    ["redis://h?db=1", "Redis URL \"redis://h?db=1\": a query"],
    ["redis://h:0", "Redis URL \"redis://h:0\": port 0"],
    ["redis://h:70000", "Redis URL \"redis://h:70000\": port 70000"],
    ["redis://user@h", "Redis URL \"redis://user@h\": a user needs a password"],
    ["unix://host/tmp/x", "Redis URL \"unix://host/tmp/x\": a socket URL"],
    ["unix:relative", "Redis URL \"unix:relative\": a socket URL"],
    ["redis://h:x", "Redis URL \"redis://h:x\": "]
  ].freeze

  CASES.each_with_index do |(url, expected), i|
    define_method("test_#{format("%02d", i)}_#{url.gsub(/\W+/, "_")}") do
      if expected.is_a?(String)
        error = assert_raises(ArgumentError) { Address.parse(url) }
        assert error.message.start_with?(expected), error.message
      else
        a = Address.parse(url)
        assert_equal expected, [a.host, a.port, a.path, a.username, a.password, a.to_s]
      end
    end
  end
end

class TestPubSubRedisEchoFilter < Minitest::Test
  EchoFilter = Up::PubSub::Redis::EchoFilter

  def time_limit_seconds
    10
  end

  # Events in order. [:expect, seq, channel, message]; [:copy, subscription, channel,
  # message, fate] where a subscription "p:x*" is the pattern x* and any other the channel;
  # [:pong, seq]; [:changed] (a confirmation); [:size, live, kept].
  SCENARIOS = [
    ["our own message is an echo",
     [[:expect, 1, "c", "m"], [:copy, "c", "c", "m", :echo], [:size, 0, 1]]],
    ["every copy of our echo is dropped",
     [[:expect, 1, "c", "m"], [:copy, "c", "c", "m", :echo], [:copy, "p:c*", "c", "m", :repeat],
      [:copy, "p:*", "c", "m", :repeat]]],
    ["another server's message matched three times is delivered once",
     [[:copy, "c", "c", "m", :deliver], [:copy, "p:c*", "c", "m", :repeat], [:copy, "p:*", "c", "m", :repeat]]],
    ["the same message twice from another server is two groups",
     [[:copy, "c", "c", "m", :deliver], [:copy, "p:*", "c", "m", :repeat],
      [:copy, "c", "c", "m", :deliver], [:copy, "p:*", "c", "m", :repeat]]],
    ["pattern copies in another order still split at the repeat",
     [[:copy, "p:a*", "c", "m", :deliver], [:copy, "p:*", "c", "m", :repeat],
      [:copy, "p:*", "c", "m", :deliver], [:copy, "p:a*", "c", "m", :repeat]]],
    ["another message starts a group",
     [[:copy, "c", "c", "m", :deliver], [:copy, "p:*", "c", "n", :deliver], [:copy, "p:*", "c", "m", :deliver]]],
    ["the same message on another channel starts a group",
     [[:copy, "p:*", "a", "m", :deliver], [:copy, "p:?", "b", "m", :deliver]]],
    ["a pong ends a group",
     [[:copy, "c", "c", "m", :deliver], [:pong, 0], [:copy, "p:*", "c", "m", :deliver]]],
    ["a confirmation ends a group",
     [[:copy, "c", "c", "m", :deliver], [:changed], [:copy, "p:*", "c", "m", :deliver]]],
    ["another server's identical message takes our expectation, and our echo is delivered in its place",
     [[:expect, 1, "c", "m"], [:copy, "c", "c", "m", :echo], [:copy, "c", "c", "m", :deliver]]],
    ["two of ours, identical, are two echoes",
     [[:expect, 1, "c", "m"], [:expect, 2, "c", "m"], [:copy, "c", "c", "m", :echo],
      [:copy, "c", "c", "m", :echo], [:copy, "c", "c", "m", :deliver], [:size, 0, 2]]],
    ["an expectation is for its channel and message only",
     [[:expect, 1, "c", "m"], [:copy, "d", "d", "m", :deliver], [:copy, "c", "c", "n", :deliver],
      [:copy, "c", "c", "m", :echo]]],
    ["a pong expires expectations up to its number",
     [[:expect, 1, "c", "m1"], [:expect, 2, "c", "m2"], [:pong, 1], [:size, 1, 1],
      [:copy, "c", "c", "m1", :deliver], [:copy, "c", "c", "m2", :echo]]],
    ["a pong below the number expires nothing",
     [[:expect, 5, "c", "m"], [:pong, 4], [:copy, "c", "c", "m", :echo]]],
    ["a confirmation expires every expectation",
     [[:expect, 1, "c", "m1"], [:expect, 2, "c", "m2"], [:changed], [:size, 0, 0],
      [:copy, "c", "c", "m1", :deliver], [:copy, "c", "c", "m2", :deliver]]],
    ["an expectation matched, then expired, is gone from the books",
     [[:expect, 1, "c", "m"], [:expect, 2, "c", "m"], [:copy, "c", "c", "m", :echo], [:size, 1, 2],
      [:pong, 1], [:size, 1, 1], [:pong, 2], [:size, 0, 0]]],
    ["messages are compared by their bytes",
     [[:expect, 1, "c", "\xC3\xA9\x00"], [:copy, "c", "c", "\xC3\xA9", :deliver],
      [:copy, "c", "c", "\xC3\xA9\x00", :echo]]]
  ].freeze

  SCENARIOS.each_with_index do |(name, events), i|
    define_method("test_#{format("%02d", i)}_#{name.gsub(/\W+/, "_")}") do
      filter = EchoFilter.new
      events.each_with_index do |(type, *args), at|
        case type
        when :expect then filter.expect(args[0], args[1].b, args[2].b)
        when :copy
          fate = filter.copy(subscription(args[0]), args[1].b, args[2].b)
          assert_equal args[3], fate, "#{name}: event #{at}"
        when :pong then filter.pong(args[0])
        when :changed then filter.subscriptions_changed
        when :size then assert_equal args, [filter.size, filter.kept], "#{name}: event #{at}"
        end
      end
    end
  end

  def test_kept_bytes_follow_expectations
    filter = EchoFilter.new
    filter.expect(1, "ch".b, "abc".b)
    filter.expect(2, "ch".b, "de".b)
    assert_equal 9, filter.kept_bytes
    assert_equal 1, filter.oldest_seq
    filter.pong(1)
    assert_equal [4, 2], [filter.kept_bytes, filter.oldest_seq]
    filter.reset
    assert_equal [0, 0, 0, nil], [filter.size, filter.kept, filter.kept_bytes, filter.oldest_seq]
  end

  private

  def subscription(name)
    name.start_with?("p:") ? [:pattern, name.delete_prefix("p:").b] : [:channel, name.b]
  end
end

class TestPubSubRedis < Minitest::Test
  Redis = Up::PubSub::Redis

  def time_limit_seconds
    20
  end

  # What one engine's deliver received, in order, and the engine's log lines.
  class Inbox
    def initialize
      @lock = Mutex.new
      @arrived = ConditionVariable.new
      @messages = []
    end

    def <<(message)
      @lock.synchronize do
        @messages << message
        @arrived.broadcast
      end
    end

    def to_a
      @lock.synchronize { @messages.dup }
    end

    # Waits until a message satisfies the block (or the count is reached); returns them all.
    def wait_for(what, timeout: 10)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      @lock.synchronize do
        until yield(@messages)
          left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          raise Minitest::Assertion, "timed out waiting for #{what}; got #{@messages.inspect[0, 2000]}" if left <= 0

          @arrived.wait(@lock, left)
        end
        @messages.dup
      end
    end
  end

  Server = Struct.new(:engine, :inbox, :log)

  def setup
    @dir = Dir.mktmpdir("up-redis-pubsub")
    @redis = RedisServer.new(@dir)
    @servers = []
  end

  def teardown
    @servers.each { |s| s.engine.close }
    @redis.stop
    FileUtils.rm_rf(@dir)
  end

  def test_a_message_published_on_one_server_reaches_the_other
    @redis.start
    a = server
    b = server
    subscribe(b, channels: %w[room])
    assert_equal true, a.engine.publish("room", "hello")
    assert_equal [%w[room hello]], b.inbox.wait_for("hello") { |m| m.size == 1 }
    received = b.inbox.to_a.first
    assert_equal [Encoding::UTF_8, Encoding::UTF_8], received.map(&:encoding)
    assert_equal [%w[room hello]], a.inbox.to_a, "delivered locally on a, at once"
    wait_until("a's PUBLISH answered") { a.engine.stats[:published] == 1 }
    assert_includes a.log.to_a, "redis pub/sub: connected to #{@redis.url}"
    stats = b.engine.stats
    assert_equal({ received: 1, delivered_locally: 0, echoes: 0, connected: true },
                 stats.slice(:received, :delivered_locally, :echoes, :connected))
  end

  def test_our_own_message_is_delivered_locally_once_and_its_echo_dropped
    @redis.start
    a = server
    b = server
    subscribe(a, channels: %w[room])
    message = +"mine"
    a.engine.publish("room", message)
    assert_same message, a.inbox.to_a.dig(0, 1), "deliver got the very object, before publish returned"
    wait_until("a's PUBLISH answered") { a.engine.stats[:published] == 1 }
    b.engine.publish("room", "end")
    got = a.inbox.wait_for("the marker") { |m| m.last == %w[room end] }
    assert_equal [%w[room mine], %w[room end]], got
    assert_equal({ echoes: 1, received: 1, delivered_locally: 1 }, a.engine.stats.slice(:echoes, :received, :delivered_locally))
  end

  # A channel matched by its name and two patterns comes back three times (message and two
  # pmessages): our own is dropped three times over, another server's delivered once, and the
  # same message twice in a row from another server is delivered twice.
  def test_a_channel_matched_by_name_and_patterns_is_delivered_once_per_publish
    @redis.start
    a = server
    b = server
    subscribe(a, channels: %w[room], patterns: %w[r* ro?m])
    a.engine.publish("room", "x")
    wait_until("a's PUBLISH answered") { a.engine.stats[:published] == 1 }
    b.engine.publish("room", "y")
    b.engine.publish("room", "y")
    b.engine.publish("rat", "z")
    b.engine.publish("room", "end")
    got = a.inbox.wait_for("the marker") { |m| m.last == %w[room end] }
    assert_equal [%w[room x], %w[room y], %w[room y], %w[rat z], %w[room end]], got
    assert_equal({ echoes: 1, received: 4 }, a.engine.stats.slice(:echoes, :received))
  end

  def test_identical_messages_from_two_servers_are_each_delivered
    @redis.start
    a = server
    b = server
    subscribe(a, channels: %w[room], patterns: %w[*])
    50.times do
      a.engine.publish("room", "same")
      b.engine.publish("room", "same")
    end
    wait_until("all answered") { a.engine.stats[:published] == 50 && b.engine.stats[:published] == 50 }
    b.engine.publish("end", "end")
    got = a.inbox.wait_for("the marker") { |m| m.last == %w[end end] }
    assert_equal 100, got.count(%w[room same])
    assert_equal({ echoes: 50, received: 51 }, a.engine.stats.slice(:echoes, :received))
  end

  # Redis matches the patterns (PSUBSCRIBE rules: * ? [...] [^...] ranges, \ escapes); the
  # engine passes them through and delivers each matching PUBLISH once.
  def test_glob_patterns_follow_redis_rules
    @redis.start
    a = server
    b = server
    patterns = ["news.*", "h?llo", "h[ae]llo", "h[^e]llo", "h\\*llo", "id[0-9]", "end"]
    subscribe(b, patterns: patterns)
    channels = %w[news.1 news. news hello hallo hxllo heello h*llo hllo id7 idx id10 end]
    channels.each { |c| a.engine.publish(c, "to #{c}") }
    got = b.inbox.wait_for("the marker") { |m| m.last&.first == "end" }
    assert_equal %w[news.1 news. hello hallo hxllo h*llo id7 end], got.map(&:first)
    assert_equal got.map { |c, _| "to #{c}" }, got.map(&:last)
  end

  def test_channels_and_payloads_are_binary_safe
    @redis.start
    a = server
    b = server
    channel = "bin\x00\xff\r\n$3\r\n".b
    subscribe(b, channels: [channel, "text"], patterns: ["bin\x00*".b])
    every_byte = (0..255).map(&:chr).join.b + "\r\n*1\r\n".b
    large = Random.new(20).bytes(1024 * 1024)
    [every_byte, "", large].each { |payload| a.engine.publish(channel, payload) }
    a.engine.publish("text", "caf\u00e9 \u{1f600}")
    got = b.inbox.wait_for("four messages") { |m| m.size == 4 }
    assert_equal [[channel, every_byte], [channel, ""], [channel, large]], got.first(3)
    assert_equal Encoding::BINARY, got[0][0].encoding
    assert_equal Encoding::BINARY, got[0][1].encoding
    assert_equal [%W[text caf\u00e9\ \u{1f600}], [Encoding::UTF_8, Encoding::UTF_8]], [got[3], got[3].map(&:encoding)]
  end

  def test_unsubscribe_stops_delivery
    @redis.start
    a = server
    b = server
    subscribe(b, channels: %w[room ctl], patterns: %w[r*])
    a.engine.publish("room", "1")
    b.inbox.wait_for("1") { |m| m.size == 1 }
    b.engine.unsubscribe("room", nil)
    wait_until("room unsubscribed") { b.engine.stats[:subscriptions] == 2 }
    a.engine.publish("room", "2 (through r*)")
    b.inbox.wait_for("2") { |m| m.size == 2 }
    b.engine.unsubscribe("r*", :glob)
    wait_until("r* unsubscribed") { b.engine.stats[:subscriptions] == 1 }
    assert_equal [["room", 0], 0], [@redis.call("PUBSUB", "NUMSUB", "room"), @redis.call("PUBSUB", "NUMPAT")]
    a.engine.publish("room", "3")
    a.engine.publish("rat", "4")
    a.engine.publish("ctl", "end")
    got = b.inbox.wait_for("the marker") { |m| m.last == %w[ctl end] }
    assert_equal [%w[room 1], ["room", "2 (through r*)"], %w[ctl end]], got
  end

  # Redis is killed (a crash), a publishes while it is down, Redis comes back. So that b has
  # its subscriptions back before a sends what it kept, Redis comes back with a's user
  # disabled, and the test enables it once Redis shows b's subscriptions: then b gets the
  # kept messages in order, and a pattern-only channel shows the pattern came back too.
  def test_subscriptions_restored_and_buffered_messages_published_in_order_after_a_restart
    @redis.start(*acl_users(a: "on"))
    a = server(@redis.url("a:pa"))
    b = server(@redis.url("b:pb"))
    subscribe(b, channels: %w[room], patterns: %w[r*])
    a.engine.publish("room", "before")
    b.inbox.wait_for("before") { |m| m.size == 1 }

    @redis.kill
    wait_until("both see Redis down") { !a.engine.stats[:connected] && !b.engine.stats[:connected] }
    5.times { |i| assert_equal true, a.engine.publish("room", "kept #{i}") }
    assert_equal 5, a.engine.stats[:pending]

    @redis.start(*acl_users(a: "off"))
    wait_until("b's subscriptions restored in Redis") do
      @redis.call("PUBSUB", "NUMSUB", "room") == ["room", 1] && @redis.call("PUBSUB", "NUMPAT") == 1
    end
    wait_until("a refused") { a.log.to_a.any? { |l| l.include?("cannot connect") && l.include?("WRONGPASS") } }
    assert_equal 5, a.engine.stats[:pending]
    assert_equal "OK", @redis.call("ACL", "SETUSER", "a", "on")
    got = b.inbox.wait_for("the kept messages") { |m| m.size == 6 }
    assert_equal ["before", *Array.new(5) { |i| "kept #{i}" }], got.map(&:last)
    a.engine.publish("rat", "pattern")
    assert_equal %w[rat pattern], b.inbox.wait_for("rat") { |m| m.size == 7 }.last

    assert_equal({ reconnects: 1, dropped: 0, pending: 0, connected: true },
                 a.engine.stats.slice(:reconnects, :dropped, :pending, :connected))
    assert_equal [1, 2], b.engine.stats.values_at(:reconnects, :subscriptions)
    assert a.log.to_a.any? { |l| l.include?("reconnected to redis://a:***@127.0.0.1") }, a.log.to_a.join("\n")
  end

  # Nothing listens on the port: everything waits in the queue up to its bound, the rest is
  # dropped, counted and logged once (the log is rate-limited); once Redis starts, the queue
  # is published.
  def test_the_buffer_bound_drops_and_counts_while_redis_is_down
    a = server
    limit = Redis::MAX_PENDING_MESSAGES
    results = Array.new(limit + 3) { |i| a.engine.publish("room", i.to_s) }
    assert_equal [true] * limit + [false] * 3, results
    assert_equal({ dropped: 3, pending: limit, delivered_locally: limit + 3, connected: false },
                 a.engine.stats.slice(:dropped, :pending, :delivered_locally, :connected))
    assert_equal 1, a.log.to_a.count { |l| l.include?("dropped") }, a.log.to_a.join("\n")

    @redis.start
    wait_until("the queue published", timeout: 15) { a.engine.stats[:published] == limit }
    assert_equal [0, 3], a.engine.stats.values_at(:pending, :dropped)
  end

  def test_the_buffer_is_bounded_in_bytes_too
    a = server
    big = "x" * (Redis::MAX_PENDING_BYTES / 2)
    assert_equal [true, false, true], [a.engine.publish("room", big), a.engine.publish("room", big), a.engine.publish("room", "small")]
    huge = "y" * (Redis::MAX_PENDING_BYTES + 1)
    b = server
    assert_equal true, b.engine.publish("room", huge), "one message larger than the bound fits an empty queue"
    assert_equal [1, 2], a.engine.stats.values_at(:dropped, :pending)
  end

  def test_close_is_prompt_whether_connected_down_or_mid_handshake
    @redis.start
    connected = server
    subscribe(connected, channels: %w[room])
    down = server("redis://127.0.0.1:#{free_port_nobody_listens_on}")
    wait_until("a failed attempt") { down.log.to_a.any? { |l| l.include?("cannot connect") } }
    silent = TCPServer.new("127.0.0.1", 0)
    mid_handshake = server("redis://127.0.0.1:#{silent.addr[1]}")
    held = silent.accept # the engine's connection, never answered
    [connected, down, mid_handshake].each do |s|
      elapsed = timed { s.engine.close }
      assert_operator elapsed, :<, 1.0, "close took #{elapsed} s (a thread not stopping on its own is killed after #{Redis::CLOSE_JOIN} s)"
      assert_nil s.engine.close, "a second close does nothing"
    end
    assert_equal false, connected.engine.publish("room", "after close")
  ensure
    held&.close
    silent&.close
  end

  # A server that accepts the connection and never answers: publish stays instant, the
  # handshake gives up after CONNECT_TIMEOUT, and the messages wait in the queue.
  def test_a_redis_that_accepts_but_never_answers_does_not_hang_publish
    silent = TCPServer.new("127.0.0.1", 0)
    held = []
    acceptor = Thread.new { loop { held << silent.accept } }
    a = server("redis://127.0.0.1:#{silent.addr[1]}")
    elapsed = timed { 100.times { |i| assert_equal true, a.engine.publish("room", i.to_s) } }
    assert_operator elapsed, :<, 0.5
    wait_until("the handshake given up", timeout: Redis::CONNECT_TIMEOUT + 3) do
      a.log.to_a.any? { |l| l.include?("cannot connect") && l.include?("no reply to PING") }
    end
    assert_equal({ pending: 100, connected: false, dropped: 0 }, a.engine.stats.slice(:pending, :connected, :dropped))
  ensure
    acceptor&.kill
    held&.each(&:close)
    silent&.close
  end

  # SIGSTOP: Redis holds its connections and answers nothing. publish stays instant; after
  # REPLY_TIMEOUT the engine gives up on the connection (the unanswered message counted as
  # dropped, since Redis may or may not run it later), and it is back once Redis is.
  def test_a_stopped_redis_is_given_up_on_then_reconnected
    @redis.start
    a = server
    b = server
    subscribe(b, channels: %w[room])
    @redis.signal(:STOP)
    elapsed = timed { assert_equal true, a.engine.publish("room", "into the void") }
    assert_operator elapsed, :<, 0.5
    wait_until("the stall noticed", timeout: Redis::REPLY_TIMEOUT + 3) { !a.engine.stats[:connected] }
    assert_equal 1, a.engine.stats[:dropped]
    assert a.log.to_a.any? { |l| l.include?("may or may not have been published") }, a.log.to_a.join("\n")
    @redis.signal(:CONT)
    wait_until("a reconnected", timeout: 10) { a.engine.stats[:connected] }
    a.engine.publish("room", "after")
    b.inbox.wait_for("after") { |m| m.last == %w[room after] }
    assert_equal 1, a.engine.stats[:reconnects]
  end

  # Subscriptions change while a publishes: every one of a's messages is delivered to a
  # exactly once (locally), never again from its echo, and every message of b at most once.
  # The unsubscriptions are not waited for, and a's queue is never empty: changes and
  # PUBLISHes interleave. Once Redis has confirmed a subscription, b publishes a message and
  # waits for Redis to answer: that one must reach a.
  def test_changing_subscriptions_while_publishing_never_duplicates
    @redis.start
    a = server
    b = server
    a.engine.subscribe("ctl", nil)
    windows = []
    400.times do |i|
      case i % 40
      when 0 then a.engine.subscribe("room", nil)
      when 10 then a.engine.subscribe("r*", :glob)
      when 20 then a.engine.unsubscribe("room", nil)
      when 30 then a.engine.unsubscribe("r*", :glob)
      end
      a.engine.publish("room", "a#{i}")
      b.engine.publish("room", "b#{i}")
      next unless [1, 11].include?(i % 40)

      wait_until("a subscribed") { a.engine.stats[:subscriptions] >= 2 }
      windows << "w#{i}"
      b.engine.publish("room", windows.last)
      wait_until("b's PUBLISH answered") { b.engine.stats[:published] == i + 1 + windows.size }
    end
    wait_until("all answered") { a.engine.stats[:published] == 400 && b.engine.stats[:published] == 400 + windows.size }
    b.engine.publish("ctl", "end")
    got = a.inbox.wait_for("the marker") { |m| m.last == %w[ctl end] }.map(&:last)
    mine = got.grep(/\Aa/)
    assert_equal({}, mine.tally.select { |_, n| n > 1 }, "a's own messages delivered more than once")
    assert_equal Array.new(400) { |i| "a#{i}" }, mine
    assert_equal windows, got.grep(/\Aw/)
    from_b = got.grep(/\Ab/)
    assert_equal from_b.uniq, from_b, "b's messages at most once"
    assert_equal windows.size + from_b.size + 1, a.engine.stats[:received]
  end

  # A user whose ACL allows only channels allowed*: Redis refuses a SUBSCRIBE and a PUBLISH
  # with NOPERM. The refusals are logged and counted, the connection stays, and what is
  # allowed works.
  def test_refused_subscriptions_and_publishes_are_logged_and_the_connection_kept
    @redis.start(*acl_users(a: "on"), "--user", "c", "on", ">pc", "~*", "&allowed*", "+@all")
    a = server(@redis.url("a:pa"))
    c = server(@redis.url("c:pc"))
    c.engine.subscribe("forbidden", nil)
    wait_until("the refusal") { c.log.to_a.any? { |l| l.include?("Redis refused SUBSCRIBE: NOPERM") } }
    c.engine.subscribe("allowed.1", nil)
    wait_until("c subscribed") { c.engine.stats[:subscriptions] == 1 }
    a.engine.publish("forbidden", "not for c")
    a.engine.publish("allowed.1", "for c")
    assert_equal [["allowed.1", "for c"]], c.inbox.wait_for("it") { |m| m.size == 1 }
    assert_equal true, c.engine.publish("forbidden", "from c")
    wait_until("the PUBLISH refused") { c.engine.stats[:dropped] == 1 }
    assert c.log.to_a.any? { |l| l.include?("Redis refused 1 PUBLISH: NOPERM") }, c.log.to_a.join("\n")
    assert_equal [0, 0, true], c.engine.stats.values_at(:reconnects, :published, :connected)
  end

  # A worker forked from the master holds copies of the engine's two sockets; after
  # after_fork_in_child it holds none, and the parent's connections still work.
  def test_a_forked_child_closes_its_copies_of_the_sockets
    @redis.start
    a = server
    subscribe(a, channels: %w[room])
    counts = [false, true].map do |forget|
      reader, writer = IO.pipe
      pid = fork do
        reader.close
        a.engine.after_fork_in_child if forget
        writer.write(sockets_to_redis(Process.pid).to_s)
        exit!(0)
      end
      writer.close
      count = reader.read.to_i
      Process.wait(pid)
      count
    end
    assert_equal [2, 0], counts, "sockets to Redis in the child, without and with after_fork_in_child"
    b = server
    b.engine.publish("room", "still here")
    assert_equal [["room", "still here"]], a.inbox.wait_for("it") { |m| m.size == 1 }
  end

  def test_a_unix_socket_url_works
    @redis.start
    a = server("unix://#{@redis.socket_path}")
    b = server("redis+unix://#{@redis.socket_path}")
    subscribe(b, channels: %w[room])
    a.engine.publish("room", "over a socket file")
    assert_equal [["room", "over a socket file"]], b.inbox.wait_for("it") { |m| m.size == 1 }
  end

  def test_bad_arguments_are_logged_not_raised
    a = server
    assert_nil a.engine.subscribe(:room, nil)
    assert_nil a.engine.subscribe("room", :regexp)
    assert_nil a.engine.unsubscribe(nil, nil)
    assert_equal false, a.engine.publish("room", 42)
    assert_equal 4, a.log.to_a.count { |l| l.include?("ignored") }
    raising = Redis.new(@redis.url, deliver: ->(*) { raise "boom" }, logger: ->(_) {})
    assert_equal true, raising.publish("room", "x")
  ensure
    raising&.close
  end

  def test_a_bad_url_raises_at_new
    assert_raises(ArgumentError) { Redis.new("rediss://h", deliver: ->(*) {}) }
  end

  private

  def server(url = @redis.url)
    inbox = Inbox.new
    log = Inbox.new
    engine = new_engine(url, deliver: ->(channel, message) { inbox << [channel, message] }, logger: ->(line) { log << line })
    Server.new(engine, inbox, log).tap { |s| @servers << s }
  end

  # The engine under test: up_ruby's (TestPubSubRedisNode has the Node runtimes').
  def new_engine(url, deliver:, logger:)
    Redis.new(url, deliver: deliver, logger: logger)
  end

  # Subscribes a server that has no subscription yet; returns once Redis confirmed them all.
  def subscribe(server, channels: [], patterns: [])
    channels.each { |channel| server.engine.subscribe(channel, nil) }
    patterns.each { |pattern| server.engine.subscribe(pattern, :glob) }
    count = channels.size + patterns.size
    wait_until("#{count} subscriptions confirmed") { server.engine.stats[:subscriptions] == count }
  end

  # Config lines for two Redis users, a (on or off) and b, each allowed every command and
  # channel (Redis 7 gives none by default).
  def acl_users(a:)
    ["--user", "a", a, ">pa", "~*", "&*", "+@all", "--user", "b", "on", ">pb", "~*", "&*", "+@all"]
  end

  # Polls the condition (state in another process or thread, with no event to wait on).
  def wait_until(what, timeout: 10)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    until yield
      flunk "timed out waiting for #{what}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.01
    end
  end

  # How many TCP sockets of process pid are connected to the test's Redis (from /proc).
  def sockets_to_redis(pid)
    remote = format("0100007F:%04X", @redis.port)
    inodes = File.readlines("/proc/net/tcp").drop(1).filter_map do |line|
      fields = line.split
      "socket:[#{fields[9]}]" if fields[2] == remote && fields[3] == "01"
    end
    Dir.glob("/proc/#{pid}/fd/*").count do |fd|
      inodes.include?(File.readlink(fd))
    rescue SystemCallError
      false
    end
  end

  def timed
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    yield
    Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
  end

  def free_port_nobody_listens_on
    server = TCPServer.new("127.0.0.1", 0)
    server.addr[1]
  ensure
    server&.close
  end
end

# The same wire tests on the Node runtimes' engine (node/up_node/redis_pubsub.js, over the npm
# ioredis client), run in a node process of the test's own behind up_ruby's engine's
# interface (test/support/node_redis_engine.rb): the same rules, bounds, timeouts, stats and
# log lines. Not here: what only a Ruby engine in a Ruby process has (forking, the arguments
# it checks, Redis.new's ArgumentError: on Node, Up::Options checks the URL before Node
# starts, test/test_pubsub_redis_servers.rb).
class TestPubSubRedisNode < TestPubSubRedis
  undef_method :test_a_forked_child_closes_its_copies_of_the_sockets
  undef_method :test_bad_arguments_are_logged_not_raised
  undef_method :test_a_bad_url_raises_at_new

  def setup
    super
    @host = NodeRedisEngine::Host.new
  end

  def teardown
    super
  ensure
    @host&.stop
  end

  private

  def new_engine(url, deliver:, logger:)
    @host.engine(url, deliver: deliver, logger: logger)
  end
end
