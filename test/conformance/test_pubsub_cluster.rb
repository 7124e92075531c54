# frozen_string_literal: true

# Pub/sub across the workers of -w 2 on every runtime (docs/websockets.md,
# "Delivery"), against apps/pubsub.ru: a publish in one worker reaches every matching
# subscriber in every worker exactly once and in publish order, whichever worker published;
# an attached engine hears of a channel once for the whole cluster, in the master, first
# subscriber in and last out, even when the worker holding a subscription is killed.
require_relative "helper"
require_relative "../support/stopped_worker"
require_relative "../support/ws_client"

class TestConformancePubSubCluster < ConformanceTest
  include StoppedWorker

  def teardown
    (@websockets || []).each(&:close_socket)
    super
  end

  def open_ws(port, path)
    ws = open_websocket(port, path: path)
    (@websockets ||= []) << ws
    ws
  end

  # Waits for both workers' boot lines (up_ruby logs "worker 0 booted (pid P)", up_node
  # "worker 0 (pid P) booted"), so that each takes connections.
  def two_workers(server)
    2.times { |i| server.wait_for(/worker #{i} (?:booted \(pid \d+\)|\(pid \d+\) booted)/) }
  end

  # A WebSocket to path on each of two workers: [[ws, pid], [ws, pid]]. up_node's primary
  # deals connections to its workers in turn. The engine's workers share the listening socket,
  # and an idle cluster gives every connection to the same worker (test/support/stopped_worker.rb):
  # there the second connects while the first's worker is stopped.
  def one_per_worker(port, path)
    first = subscribe(port, path)
    second = 10.times.lazy.map { another_worker(first.last) { subscribe(port, path) } }
                      .find { |_, pid| pid != first.last }
    refute_nil second, "two workers took connections"
    [first, second]
  end

  def subscribe(port, path)
    ws = open_ws(port, path)
    [ws, Integer(ws.read_message.payload[/\Asubscribed (\d+)\z/, 1])]
  end

  def another_worker(pid, &block)
    runtime == "up_node" ? yield : with_worker_stopped(pid, &block)
  end

  def test_a_publish_reaches_subscribers_in_every_worker_once_in_order
    server = start_own_server("pubsub.ru", "-w", "2")
    two_workers(server)
    subs = one_per_worker(server.port, "/sub?c=news")
    publisher = open_ws(server.port, "/sub")
    publisher.read_message # subscribed to nothing
    20.times { |i| publisher.text("news:m#{i}") }
    subs.each do |ws, pid|
      assert_equal Array.new(20) { |i| "m#{i}" }, Array.new(20) { ws.read_message.payload }, "worker #{pid}"
    end
    subs.each { |ws, _| ws.text("news:end") }
    subs.each { |ws, _| assert_equal %w[end end], Array.new(2) { ws.read_message.payload }, "once each, no more" }
  end

  def test_an_engine_hears_of_a_channel_once_for_the_cluster_in_the_master
    log = File.join(Dir.mktmpdir("up-engine"), "engine.log")
    server = start_own_server("pubsub.ru", "-w", "2", env: { "UP_TEST_ENGINE_LOG" => log })
    two_workers(server)
    subs = one_per_worker(server.port, "/sub?c=room")
    wait_for_file(log, /subscribe room/)
    # A worker's link to the master is one ordered stream: its subscriber's interest comes
    # before what it publishes next, so once the other worker hears that publish the master
    # counts both subscriptions (otherwise the second could arrive after the first worker's
    # death and be heard as a new first).
    subs.last.first.text("room:both")
    assert_equal "both", subs.first.first.read_message.payload
    # The worker with one of them dies: the other still holds the channel.
    _, victim = subs.first
    Process.kill(:KILL, victim)
    server.wait_for(/worker \d \(pid #{victim}\) exited/)
    subs.last.first.close(1000)
    wait_for_file(log, /unsubscribe room/)
    assert_equal ["subscribe room nil #{server.pid}", "unsubscribe room nil #{server.pid}"], File.readlines(log, chomp: true),
                 "once each for the two workers' subscriptions, in the master"
  end

  private

  def wait_for_file(path, pattern, timeout: 10)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    until File.exist?(path) && File.read(path).match?(pattern)
      raise "timed out waiting for #{pattern.inspect} in #{path}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.02
    end
  end
end
