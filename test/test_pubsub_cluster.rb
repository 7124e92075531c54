# frozen_string_literal: true

# Pub/sub across the workers of exe/up_ruby -w 2 (reference/websocket-pubsub.md, "Delivery"):
# a publish in one worker reaches every matching subscriber in every worker exactly once, in
# publish order; an attached engine hears of a channel once for the whole cluster, in the
# master, first subscriber in and last out, even across workers and a worker's death.
require_relative "helper"
require_relative "support/lifecycle"
require_relative "support/ws_client"

class TestPubSubCluster < Minitest::Test
  include UpTestHelpers
  include LifecycleHelpers

  APP = "test/rackup/pubsub_cluster.ru"

  # WebSockets to path until two different workers have one each: [[ws, pid], ...], one per
  # worker (the others are closed). They connect eight at a time: one after the other, each
  # finds both workers idle, and the kernel may wake the same one every time.
  def one_per_worker(port, path)
    found = {}
    extra = []
    10.times do
      batch = Array.new(8) do
        Thread.new do
          ws = WSClient.open(port, path: path)
          [ws, ws.read_message.payload[/\Apid (\d+)\z/, 1].to_i]
        end
      end
      batch.map(&:value).each { |ws, pid| found.key?(pid) ? extra << ws : found[pid] = ws }
      break if found.size == 2
    end
    extra.each(&:close_socket)
    assert_equal 2, found.size, "two workers took connections"
    found.map { |pid, ws| [ws, pid] }
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
    wait_until { File.exist?(log) && File.read(log).include?("subscribe room") }
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

  # An app loaded in each worker (--no-preload) attaches its engine there: that worker's own,
  # told of that worker's subscriptions, in that worker.
  def test_an_engine_attached_in_a_worker_hears_of_that_workers_channels
    log = File.join(Dir.mktmpdir, "engine.log")
    server = start_up("-w", "2", "--no-preload", app: APP, env: { "UP_TEST_ENGINE_LOG" => log })
    booted(server, 2)
    ws = WSClient.open(server.port, path: "/sub?c=lobby")
    pid = ws.read_message.payload[/\Apid (\d+)\z/, 1]
    ws.close(1000)
    wait_until { File.exist?(log) && File.read(log).include?("unsubscribe lobby") }
    assert_equal ["subscribe lobby nil #{pid}", "unsubscribe lobby nil #{pid}"], File.readlines(log, chomp: true)
  ensure
    ws&.close_socket
  end

  private

  def wait_until(timeout: 10)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    until yield
      raise "timed out" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.02
    end
  end
end
