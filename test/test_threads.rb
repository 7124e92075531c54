# frozen_string_literal: true

# -t N: app calls that sleep or wait on IO run on app threads, so they do not hold up the
# worker's other connections; -t 0 runs the app on the loop thread.
require_relative "helper"

class TestThreads < Minitest::Test
  include UpTestHelpers

  SLOW_AND_FAST = lambda do |env|
    sleep 1 if env["PATH_INFO"] == "/slow"
    [200, {}, [env["PATH_INFO"]]]
  end

  def test_ten_slow_requests_do_not_hold_up_a_fast_one
    start_server(SLOW_AND_FAST, threads: 11)
    slow = Array.new(10) do
      connect.tap { |s| s.write("GET /slow HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n") }
    end
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    fast = get("/fast")
    fast_time = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
    assert_equal "/fast", fast.body
    assert_operator fast_time, :<, 0.5, "the fast request waited for the slow ones"
    slow.each { |s| assert_equal "/slow", read_response(s).body }
    # All ten slept at once, not one after the other.
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0, :<, 5
  end

  # Calls that each wait a fraction of a millisecond for IO (a Redis or database round trip)
  # still finish often, but while one waits the requests behind it could run: a second thread
  # serves them. Sleeping stands in for the IO wait (the thread is asleep in the kernel).
  def test_short_io_waits_with_requests_queued_bring_in_another_thread
    start_server(lambda { |_env|
      sleep 0.0003
      [200, {}, [Thread.current.object_id.to_s]]
    }, threads: 4)
    socks = Array.new(8) do
      connect.tap { |s| s.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n" * 40) }
    end
    served_by = socks.flat_map { |s| Array.new(40) { read_response(s).body } }
    assert_equal 320, served_by.size
    assert_operator served_by.uniq.size, :>, 1, "one thread ran every call, waits and all"
  end

  def test_fewer_threads_than_slow_requests_queue_but_all_are_answered
    start_server(SLOW_AND_FAST, threads: 2)
    socks = Array.new(4) do
      connect.tap { |s| s.write("GET /slow HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n") }
    end
    socks.each { |s| assert_equal "/slow", read_response(s).body }
  end

  def test_threaded_mode_keeps_pipelined_order
    start_server(->(env) { [200, {}, [env["PATH_INFO"]]] }, threads: 4)
    sock = connect
    sock.write((0...50).map { |i| "GET /#{i} HTTP/1.1\r\nHost: h\r\n\r\n" }.join)
    50.times { |i| assert_equal "/#{i}", read_response(sock).body }
  end

  def test_inline_mode_serves_concurrent_connections
    start_server(->(env) { [200, {}, [env["PATH_INFO"]]] }, threads: 0)
    socks = Array.new(20) { |i| connect.tap { |s| s.write("GET /#{i} HTTP/1.1\r\nHost: h\r\n\r\n") } }
    socks.each_with_index { |s, i| assert_equal "/#{i}", read_response(s).body }
  end

  def test_stop_waits_for_in_flight_requests
    in_app = Queue.new
    server = start_server(->(env) { in_app << true; SLOW_AND_FAST.call(env) }, threads: 2)
    sock = connect
    sock.write("GET /slow HTTP/1.1\r\nHost: h\r\n\r\n")
    in_app.pop # the request is in the app when the stop comes
    stopper = Thread.new { server.stop }
    res = read_response(sock)
    assert_equal "/slow", res.body
    assert stopper.join(5)
  end

  # What the control endpoint reports per worker: requests finished, connections open,
  # requests waiting for a thread, threads in a request.
  def test_stats_count_requests_connections_and_busy_threads
    in_app = Queue.new
    release = Queue.new
    server = start_server(lambda { |env|
      if env["PATH_INFO"] == "/hold"
        in_app << true
        release.pop
      end
      [200, {}, ["ok"]]
    }, threads: 2)
    keep_alive = connect
    3.times do
      keep_alive.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
      read_response(keep_alive)
    end
    held = connect
    held.write("GET /hold HTTP/1.1\r\nHost: h\r\n\r\n")
    in_app.pop
    stats = server.server.stats
    assert_equal 3, stats[:requests]
    assert_equal 2, stats[:connections], "the keep-alive one and the held one"
    assert_equal 1, stats[:busy]
    assert_equal 0, stats[:backlog]
    assert_equal 2, stats[:threads]
    release << true
    assert_equal "ok", read_response(held).body
  ensure
    release << true
  end
end
