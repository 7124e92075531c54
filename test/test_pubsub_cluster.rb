# frozen_string_literal: true

# Pub/sub across the workers of exe/up_ruby -w 2 (docs/websockets.md, "Delivery"):
# a publish in one worker reaches every matching subscriber in every worker exactly once, in
# publish order; an attached engine hears of a channel once for the whole cluster, in the
# master, first subscriber in and last out, even across workers and a worker's death.
require_relative "helper"
require_relative "support/lifecycle"
require_relative "support/stopped_worker"
require_relative "support/ws_client"

class TestPubSubCluster < Minitest::Test
  include UpTestHelpers
  include LifecycleHelpers
  include StoppedWorker

  APP = "test/rackup/pubsub_cluster.ru"

  # A WebSocket to path on each of the two workers: [[ws, pid], [ws, pid]]. The second
  # connects while the first's worker is stopped (see StoppedWorker).
  def one_per_worker(port, path)
    subscribe = lambda do
      ws = WSClient.open(port, path: path)
      [ws, ws.read_message.payload[/\Apid (\d+)\z/, 1].to_i]
    end
    first = subscribe.call
    second = with_worker_stopped(first.last, &subscribe)
    assert_equal 2, [first.last, second.last].uniq.size, "two workers took connections"
    [first, second]
  end

  def test_a_publish_reaches_subscribers_in_every_worker_once_in_order
    server = start_up("-w", "2", "-t", "2", app: APP)
    booted(server, 2)
    subs = one_per_worker(server.port, "/sub?c=news")
    publisher = WSClient.open(server.port, path: "/pub")
    publisher.read_message # its pid
    20.times { |i| publisher.text("news:m#{i}") }
    subs.each do |ws, pid|
      assert_equal Array.new(20) { |i| "m#{i}" }, Array.new(20) { ws.read_message.payload }, "worker #{pid}"
    end
    subs.each { |ws, _| ws.text("news:end") }
    subs.each { |ws, _| assert_equal %w[end end], Array.new(2) { ws.read_message.payload }, "once each, no more" }
  ensure
    subs&.each { |ws, _| ws.close_socket }
    publisher&.close_socket
  end

  def test_engines_hear_of_a_channel_once_for_the_cluster
    log = File.join(Dir.mktmpdir, "engine.log")
    server = start_up("-w", "2", "-t", "2", app: APP, env: { "UP_TEST_ENGINE_LOG" => log })
    pids = booted(server, 2)
    master = server.pid
    subs = one_per_worker(server.port, "/sub?c=room")
    master_heard_of(subs, "room")
    assert_equal ["subscribe room nil #{master}"], File.readlines(log, chomp: true), "once for two workers"
    # The worker with one of them dies: the other still holds the channel.
    victim_ws, victim = subs.first
    Process.kill(:KILL, victim)
    server.wait_for(/worker \d \(pid #{victim}\) exited/)
    subs.last.first.close(1000)
    wait_until { File.read(log).include?("unsubscribe room") }
    assert_equal ["subscribe room nil #{master}", "unsubscribe room nil #{master}"], File.readlines(log, chomp: true),
                 "once each for the two workers' subscriptions, in the master"
    assert_includes pids, victim
  ensure
    victim_ws&.close_socket
    subs&.each { |ws, _| ws.close_socket }
  end

  # A worker that publishes and dies before the master read its link: what it wrote there is
  # still the other workers' (its own subscribers are gone with it, not the messages it sent
  # them). The master is stopped meanwhile, so that when it goes on it finds the worker dead
  # with more on its link than one read takes, and reaps it in the same turn.
  def test_what_a_dead_worker_published_still_reaches_the_others
    server = start_up("-w", "2", "-t", "2", app: APP)
    booted(server, 2)
    (dying_ws, dying), (ws, pid) = one_per_worker(server.port, "/sub?c=last")
    master_heard_of([[ws, pid]], "last")
    count = 12 # 12 of 8 KiB: past one read of the master's (64 KiB), within the link's buffer
    with_worker_stopped(server.pid) do
      dying_ws.text("burst last #{count} 8192")
      nil until dying_ws.read_message.payload == "sent" # after the other's "heard"
      Process.kill(:KILL, dying)
      wait_until { reapable?(dying) }
    end
    server.wait_for(/worker \d \(pid #{dying}\) exited/)
    assert_equal Array.new(count) { |i| "m#{i}" }, Array.new(count) { ws.read_message.payload[/\Am\d+/] },
                 "every message, in order"
    ws.text("last:end")
    assert_equal "end", ws.read_message.payload, "nothing more"
  ensure
    dying_ws&.close_socket
    ws&.close_socket
  end

  private

  # Returns once the master has counted the subscription of each of subs. A worker tells the
  # master of its first subscription on its link, in order with what it publishes there after:
  # each client publishes once it subscribed (its on_message runs after its on_open), and its
  # own message, which only the master sends down, comes back to it once the master has read
  # its worker's link that far. (The "pid" line a client reads is written before the worker
  # subscribes, so it proves nothing of the kind.)
  def master_heard_of(subs, channel)
    subs.each { |ws, pid| ws.text("#{channel}:heard #{pid}") }
    subs.each do |ws, pid|
      nil until ws.read_message.payload == "heard #{pid}"
    end
  end

  # Dead with all its threads (a zombie the master can reap), not only its first thread.
  def reapable?(pid)
    Dir.children("/proc/#{pid}/task").size == 1 && File.read("/proc/#{pid}/stat")[/\) (\S)/, 1] == "Z"
  end

  def wait_until(timeout: 10)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    until yield
      raise "timed out" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.02
    end
  end
end
