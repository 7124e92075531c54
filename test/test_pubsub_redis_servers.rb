# frozen_string_literal: true

# Pub/sub between servers through one Redis, as a user runs it: servers started with
# --redis-url, WebSocket clients subscribed on each. test/test_pubsub_redis.rb holds up_ruby's
# engine itself to its rules; this holds each runtime to running one: in the master (the
# primary), the default engine, restored after Redis restarts, and never in a worker's hands.
# Every test runs once per runtime: server A is the runtime under test (up_ruby, up or
# up_node), server B is always up_ruby, so that the Node runtimes' engine
# (node/up_node/redis_pubsub.js) and up_ruby's carry each other's messages both ways.
require_relative "helper"
require_relative "support/lifecycle"
require_relative "support/ws_client"
require_relative "support/redis_server"
require_relative "support/up_node_process"
require_relative "support/up_process"

module PubSubRedisServersTests
  APP = "test/rackup/pubsub_cluster.ru"

  def setup
    super
    @redis = RedisServer.new(@dir).start
  end

  def teardown
    @redis&.stop
    super
  end

  def test_a_publish_on_one_server_reaches_the_other_once_in_order
    a = start_a("-w", "2", "-t", "2", "--redis-url", @redis.url)
    booted_a(a, 2)
    b = start_b("-w", "1", "--redis-url", @redis.url)
    subs = [open_ws(a.port, "/sub?c=news"), open_ws(a.port, "/sub?c=news"), open_ws(b.port, "/sub?c=news")]
    redis_subscribers("news", 2)
    publisher_b = open_ws(b.port, "/pub")
    publisher_a = open_ws(a.port, "/pub")

    10.times { |i| publisher_b.text("news:b#{i}") }
    10.times { |i| publisher_a.text("news:a#{i}") }
    subs.each_with_index do |ws, i|
      got = Array.new(20) { ws.read_message.payload }
      assert_equal Array.new(10) { |n| "b#{n}" }, got.grep(/\Ab/), "subscriber #{i}: B's, in order"
      assert_equal Array.new(10) { |n| "a#{n}" }, got.grep(/\Aa/), "subscriber #{i}: A's, in order"
    end
    publisher_b.text("news:end")
    subs.each_with_index { |ws, i| assert_equal "end", ws.read_message.payload, "subscriber #{i}: nothing twice" }
  ensure
    [*subs, publisher_a, publisher_b].compact.each(&:close_socket)
  end

  # A's engine holds a channel and a pattern that both match news.a: Redis sends a message
  # from B twice (message, pmessage), and A's own publishes come back twice; each subscriber
  # still gets each message once, in a single process as in a cluster.
  def test_pattern_subscriptions_get_each_message_once
    a = start_a("-w", "1", "--redis-url", @redis.url)
    b = start_b("-w", "1", "--redis-url", @redis.url)
    pattern_a = open_ws(a.port, "/sub?p=news.*")
    channel_a = open_ws(a.port, "/sub?c=news.a")
    pattern_b = open_ws(b.port, "/sub?p=news.[ab]")
    redis_subscribers("news.a", 1)
    redis_patterns(2)
    publisher_a = open_ws(a.port, "/pub")
    publisher_b = open_ws(b.port, "/pub")

    publisher_a.text("news.a:x1")
    publisher_a.text("news.b:x2")
    publisher_a.text("news.c:x3")
    publisher_b.text("news.a:y1")
    publisher_b.text("news.b:y2")
    expected = { pattern_a => %w[x1 x2 x3 y1 y2], channel_a => %w[x1 y1], pattern_b => %w[x1 x2 y1 y2] }
    expected.each do |ws, messages|
      got = Array.new(messages.size) { ws.read_message.payload }
      assert_equal messages.grep(/x/), got.grep(/x/), "A's, once each and in order"
      assert_equal messages.grep(/y/), got.grep(/y/), "B's, once each and in order"
    end
    publisher_b.text("news.a:end")
    expected.each_key { |ws| assert_equal "end", ws.read_message.payload, "nothing twice" }
  ensure
    [pattern_a, channel_a, pattern_b, publisher_a, publisher_b].compact.each(&:close_socket)
  end

  def test_subscriptions_come_back_after_redis_restarts
    a = start_a("-w", "2", "--redis-url", @redis.url)
    booted_a(a, 2)
    b = start_b("-w", "1", "--redis-url", @redis.url)
    sub_a = open_ws(a.port, "/sub?c=room")
    sub_b = open_ws(b.port, "/sub?c=room")
    redis_subscribers("room", 2)

    @redis.kill
    publisher_a = open_ws(a.port, "/pub")
    publisher_a.text("room:during")
    assert_equal "during", sub_a.read_message.payload, "A's own subscribers do not wait for Redis"
    @redis.start
    redis_subscribers("room", 2) # each master subscribed again, by itself
    a.wait_for(/reconnected to redis/)
    publisher_b = open_ws(b.port, "/pub")
    publisher_b.text("room:after b")
    publisher_a.text("room:after a")
    [sub_a, sub_b].each do |ws|
      got = []
      got << ws.read_message.payload until got.include?("after a") && got.include?("after b")
      assert_equal 1, got.count("after a")
      assert_equal 1, got.count("after b")
    end
    publisher_b.text("room:end")
    [sub_a, sub_b].each { |ws| assert_equal "end", ws.read_message.payload, "nothing twice" }
    assert_equal 1, a.output.scan(/reconnected to redis/).size, "one line when the outage ended"
  ensure
    [sub_a, sub_b, publisher_a, publisher_b].compact.each(&:close_socket)
  end

  # The master (primary) holds the two connections; a worker, even one started after the
  # master connected (forked from it on up_ruby), holds none: else a connection the master
  # drops stays open in Redis, fed and unread.
  def test_a_worker_holds_no_connection_to_redis
    a = start_a("-w", "2", "--redis-url", @redis.url)
    first = booted_a(a, 2).first
    sub = open_ws(a.port, "/sub?c=news")
    redis_subscribers("news", 1)
    assert_equal 2, redis_sockets(a.pid), "the master has its subscriber and publisher connections"

    Process.kill(:KILL, first)
    respawned = a.wait_for(respawned_pattern(first))[1].to_i
    assert_equal 0, redis_sockets(respawned), "a worker started after the master connected"
    assert_equal 2, redis_sockets(a.pid)
  ensure
    sub&.close_socket
  end

  def test_a_bad_redis_url_stops_the_boot
    server = start_a("--redis-url", "http://127.0.0.1:1", wait: false)
    status = server.wait
    refute status.success?
    assert_match(/--redis-url .*scheme/, server.output)
  end

  private

  # Server A, of the runtime under test.
  def start_a(*args, wait: true)
    start_up(*args, app: APP, wait: wait, command: runtime_command, env: runtime_env)
  end

  # Server B, up_ruby.
  def start_b(*args)
    start_up(*args, app: APP)
  end

  # The pids of A's workers 0...n once each has booted (the first time each index did).
  def booted_a(server, n)
    Array.new(n) { |i| server.wait_for(booted_pattern(i))[1].to_i }
  end

  def open_ws(port, path)
    ws = WSClient.open(port, path: path)
    ws.read_message # "pid N": the handler has run
    ws
  end

  # Waits until Redis counts n subscribers (servers) to channel.
  def redis_subscribers(channel, n)
    wait_for_redis("subscribers to #{channel}", n) { @redis.call("PUBSUB", "NUMSUB", channel)[1] }
  end

  # Waits until Redis counts n distinct patterns subscribed to.
  def redis_patterns(n)
    wait_for_redis("patterns", n) { @redis.call("PUBSUB", "NUMPAT") }
  end

  def wait_for_redis(what, n, timeout: 15)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    until (count = yield) == n
      raise "Redis counts #{count} #{what}, not #{n}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.02
    end
  end

  # pid's established TCP connections to the test's Redis, from /proc.
  def redis_sockets(pid)
    inodes = Dir.glob("/proc/#{pid}/fd/*").filter_map { |fd| File.readlink(fd)[/\Asocket:\[(\d+)\]\z/, 1] rescue nil }
    port = format("%04X", @redis.port)
    File.readlines("/proc/#{pid}/net/tcp").drop(1).count do |line|
      fields = line.split
      fields[2].end_with?(":#{port}") && fields[3] == "01" && inodes.include?(fields[9])
    end
  end
end

# A is up_ruby.
class TestPubSubRedisServers < Minitest::Test
  include UpTestHelpers
  include LifecycleHelpers
  include PubSubRedisServersTests

  private

  def runtime_command
    [RbConfig.ruby, CLIProcess::EXE]
  end

  def runtime_env
    {}
  end

  def booted_pattern(index)
    /worker #{index} booted \(pid (\d+)\)/
  end

  def respawned_pattern(old_pid)
    /worker 0 booted \(pid (?!#{old_pid}\))(\d+)\)/
  end
end

# A is up_node: the Node primary runs the engine with --preload (the default).
class TestPubSubRedisServersUpNode < TestPubSubRedisServers
  # With --no-preload the primary has no Ruby to run an engine in: each worker runs its own
  # (docs/websockets.md, "Across servers"), and every subscriber still gets each message once.
  def test_without_preload_each_worker_runs_its_own_engine
    a = start_a("-w", "2", "--no-preload", "--redis-url", @redis.url)
    workers = booted_a(a, 2)
    b = start_b("-w", "1", "--redis-url", @redis.url)
    subs = Array.new(2) { WSClient.open(a.port, path: "/sub?c=news") }
    taken_by = subs.map { |ws| ws.read_message.payload[/\Apid (\d+)\z/, 1].to_i }
    subs << open_ws(b.port, "/sub?c=news")
    redis_subscribers("news", taken_by.uniq.size + 1)
    publisher_a = open_ws(a.port, "/pub")
    publisher_b = open_ws(b.port, "/pub")

    5.times { |i| publisher_a.text("news:a#{i}") }
    5.times { |i| publisher_b.text("news:b#{i}") }
    subs.each_with_index do |ws, i|
      got = Array.new(10) { ws.read_message.payload }
      assert_equal Array.new(5) { |n| "a#{n}" }, got.grep(/\Aa/), "subscriber #{i}: A's, once each, in order"
      assert_equal Array.new(5) { |n| "b#{n}" }, got.grep(/\Ab/), "subscriber #{i}: B's, once each, in order"
    end
    publisher_b.text("news:end")
    subs.each_with_index { |ws, i| assert_equal "end", ws.read_message.payload, "subscriber #{i}: nothing twice" }
    assert_equal 0, redis_sockets(a.pid), "the primary holds no connection"
    assert_equal [2, 2], workers.map { |pid| redis_sockets(pid) }, "each worker its own pair"
  ensure
    [*subs, publisher_a, publisher_b].compact.each(&:close_socket)
  end

  private

  def runtime_command
    [RbConfig.ruby, UpNodeProcess::EXE]
  end

  def runtime_env
    { "XDG_CACHE_HOME" => UpNodeProcess::CACHE }
  end

  def booted_pattern(index)
    /worker #{index} \(pid (\d+)\) booted/
  end

  def respawned_pattern(old_pid)
    /worker 0 \(pid (?!#{old_pid}\))(\d+)\) booted/
  end
end

# A is up: the same primary and engine as up_node's, over the engine's fan-out.
class TestPubSubRedisServersUp < TestPubSubRedisServersUpNode
  private

  def runtime_command
    [RbConfig.ruby, UpProcess::EXE]
  end

  def runtime_env
    { "XDG_CACHE_HOME" => UpProcess::CACHE }
  end
end
