# frozen_string_literal: true

# Pub/sub between servers through one Redis, as a user runs it: two exe/up_ruby started with
# --redis-url (one a cluster, one a single process), WebSocket clients subscribed on both.
# test/test_pubsub_redis.rb holds the engine itself to its rules; this holds the server to
# running it: in the master, the default engine, restored after Redis restarts, and never in a
# worker's hands.
require_relative "helper"
require_relative "support/lifecycle"
require_relative "support/ws_client"
require_relative "support/redis_server"

class TestPubSubRedisServers < Minitest::Test
  include UpTestHelpers
  include LifecycleHelpers

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
    a = start_up("-w", "2", "-t", "2", "--redis-url", @redis.url, app: APP)
    booted(a, 2)
    b = start_up("-w", "1", "--redis-url", @redis.url, app: APP)
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

  def test_subscriptions_come_back_after_redis_restarts
    a = start_up("-w", "2", "--redis-url", @redis.url, app: APP)
    booted(a, 2)
    b = start_up("--redis-url", @redis.url, app: APP)
    sub = open_ws(a.port, "/sub?c=room")
    redis_subscribers("room", 1)

    @redis.kill
    @redis.start
    redis_subscribers("room", 1) # A's master subscribed again, by itself
    publisher = open_ws(b.port, "/pub")
    publisher.text("room:after")
    assert_equal "after", sub.read_message.payload
  ensure
    [sub, publisher].compact.each(&:close_socket)
  end

  # Workers fork from a master already connected to Redis: each must let go of its copies of
  # those sockets, or a connection the master drops stays open in Redis, fed and unread.
  def test_a_worker_holds_no_connection_to_redis
    a = start_up("-w", "2", "--redis-url", @redis.url, app: APP)
    first = booted(a, 2).first
    sub = open_ws(a.port, "/sub?c=news")
    redis_subscribers("news", 1)
    assert_equal 2, redis_sockets(a.pid), "the master has its subscriber and publisher connections"

    Process.kill(:KILL, first)
    respawned = a.wait_for(/worker 0 booted \(pid (?!#{first}\))(\d+)\)/)[1].to_i
    assert_equal 0, redis_sockets(respawned), "a worker forked after the master connected"
    assert_equal 2, redis_sockets(a.pid)
  ensure
    sub&.close_socket
  end

  def test_a_bad_redis_url_stops_the_boot
    server = start_up("--redis-url", "http://127.0.0.1:1", app: APP, wait: false)
    status = server.wait
    refute status.success?
    assert_match(/--redis-url .*scheme/, server.output)
  end

  private

  def open_ws(port, path)
    ws = WSClient.open(port, path: path)
    ws.read_message # "pid N": the handler has run
    ws
  end

  # Waits until Redis counts n subscribers (servers) to channel.
  def redis_subscribers(channel, n, timeout: 15)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    until (count = @redis.call("PUBSUB", "NUMSUB", channel)[1]) == n
      raise "Redis counts #{count} subscribers to #{channel}, not #{n}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

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
