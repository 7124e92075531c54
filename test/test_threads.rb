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
  # serves them. A select on a pipe that stays empty stands in for the IO wait.
  def test_short_io_waits_with_requests_queued_bring_in_another_thread
    reader, writer = IO.pipe
    start_server(lambda { |_env|
      IO.select([reader], nil, nil, 0.0003)
      [200, {}, [Thread.current.object_id.to_s]]
    }, threads: 4)
    assert_operator served_by(8, 40).uniq.size, :>, 1, "one thread ran every call, waits and all"
  ensure
    [reader, writer].each { |io| io&.close }
  end

  # Calls that only compute hold the GVL: a second thread could only wait for it, and threads
  # taking turns at it serve fewer requests than one. So the watchdog wakes no thread for them
  # (it promotes none), and one thread at a time serves every call; which one may change, when
  # the loop is handed back to a sleeper other than the thread that asked for it.
  #
  # Only a stall of this whole process can wake one: the watchdog cannot tell a call that has
  # run for LONG_CALL from a process the machine did not run for that long, and must wake a
  # thread for the first. Its look then found no call finished for LONG_CALL while one was in
  # the app; one thread at a time serves them, so that call's end and the end of the call
  # before it are more than LONG_CALL apart from the end of the call after it. Each call notes
  # the promotions so far as it starts, and the first to see one must come after such a gap.
  def test_calls_that_only_compute_wake_no_second_thread
    calls = []
    server = start_server(lambda { |_env|
      promotions = server.server.stats[:promotions]
      compute(0.002)
      calls << [promotions, now]
      [200, {}, ["ok"]]
    }, threads: 4)
    settle
    calls.clear
    start = now
    under_load(0.6)
    first = calls.index { |promotions, _| promotions.positive? }
    # The first promoted call follows the promotion; the gap may end with it, or with the
    # next call of a thread that started it before the promotion. Before the load, no call
    # was in the app: its start is where the first gap may begin.
    ends = [start] + calls.first(first ? first + 1 : calls.size).map(&:last)
    stall = ends.each_cons(3).any? { |a, _, c| c - a > LONG_CALL }
    assert first.nil? || stall,
           "a thread was woken for calls that never wait (no gap of #{LONG_CALL} s before call #{first})"
    assert_operator calls.size, :>, 20, "too few calls to tell"
  end

  # A worker idle for a second has its watchdog asleep: the call that wakes it has only just
  # started, and wakes no thread (it did: the watchdog counted the call from its last look,
  # a second before, as a call running for LONG_CALL). Only a stall of the process as long
  # can wake one, and then the exchange takes as long.
  def test_a_call_after_an_idle_second_wakes_no_thread
    server = start_server(lambda { |_env|
      compute(0.005)
      [200, {}, ["ok"]]
    }, threads: 4)
    get("/")
    sleep 1.5 # the idle second under test: the watchdog sleeps after 100 idle looks, 10 ms apart
    t0 = now
    assert_equal "ok", get("/").body
    took = now - t0
    promotions = server.server.stats[:promotions]
    assert promotions.zero? || took > LONG_CALL, "#{promotions} thread(s) woken for a call of #{took} s"
  end

  # Threads woken while calls waited for IO go back to sleep once the calls only compute, even
  # though requests never stop coming. Each call notes how many app threads were awake as it
  # ran (which thread serves a call may change when the loop is handed back, so that is no
  # measure): more than one while calls wait, and one again once they only compute.
  def test_threads_woken_for_io_waits_go_back_to_sleep
    reader, writer = IO.pipe
    wait = true
    calls = []
    server = start_server(lambda { |_env|
      waited = wait
      waited ? IO.select([reader], nil, nil, 0.0003) : compute(0.001)
      calls << [waited, server.server.stats[:awake]]
      [200, {}, ["ok"]]
    }, threads: 4)
    settle
    calls.clear
    switch = Thread.new { sleep 0.4; wait = false }
    # Demotions come 20 ms apart; this leaves the compute-only calls a second and more.
    under_load(1.6)
    waits, computes = calls.partition(&:first)
    assert_operator waits.map(&:last).max, :>, 1, "no thread was woken for the IO waits"
    assert_includes computes.map(&:last), 1, "the threads woken for IO stayed awake while calls only computed"
  ensure
    switch&.join
    [reader, writer].each { |io| io&.close }
  end

  # A thread in a long call (a long poll waiting on a Queue) takes no turns at the GVL: the one
  # thread serving every other request is not sent to sleep because of it.
  def test_long_calls_do_not_get_the_serving_thread_sent_to_sleep
    release = Queue.new
    server = start_server(lambda { |env|
      release.pop if env["PATH_INFO"] == "/poll"
      compute(0.0005)
      [200, {}, [env["PATH_INFO"]]]
    }, threads: 4)
    settle
    polls = Array.new(3) { connect.tap { |s| s.write("GET /poll HTTP/1.1\r\nHost: h\r\n\r\n") } }
    under_load(1.0)
    stats = server.server.stats
    3.times { release << true }
    polls.each { |s| assert_equal "/poll", read_response(s).body }
    assert_operator stats[:demotions], :<=, 2, "the serving thread was sent to sleep and woken again"
  end

  # Calls that sleep wait in the kernel as GVL waits do, so the watchdog may send a thread to
  # sleep while they run; when calls then get stuck it wakes one again, and waits longer each
  # time before the next demotion.
  def test_demotions_that_stall_calls_come_less_and_less_often
    server = start_server(lambda { |_env|
      sleep 0.005
      [200, {}, ["ok"]]
    }, threads: 4)
    settle
    under_load(1.0)
    stats = server.server.stats
    assert_operator stats[:promotions], :>, 0
    assert_operator stats[:demotions], :<=, 8, "a demotion every 20 ms, each undone at once"
  end

  # Under Ruby's M:N threads a Ruby thread has no native thread of its own, so the watchdog
  # cannot look at what a call waits for (thread_looks: false is that way): it counts every
  # call as waiting for IO. Slow calls still hold up no other request...
  def test_without_thread_looks_slow_requests_do_not_hold_up_a_fast_one
    start_server(SLOW_AND_FAST, threads: 3, thread_looks: false)
    slow = Array.new(2) do
      connect.tap { |s| s.write("GET /slow HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n") }
    end
    t0 = now
    assert_equal "/fast", get("/fast").body
    assert_operator now - t0, :<, 0.5, "the fast request waited for the slow ones"
    slow.each { |s| assert_equal "/slow", read_response(s).body }
  end

  # ... and the price is paid by calls that only compute: threads are woken for them too.
  def test_without_thread_looks_calls_that_only_compute_wake_threads
    start_server(lambda { |_env|
      compute(0.002)
      [200, {}, [Thread.current.object_id.to_s]]
    }, threads: 4, thread_looks: false)
    settle
    assert_operator share_of_busiest(under_load(0.6)), :<, 0.7,
                    "one thread served (nearly) every call: the looks were on"
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

  private

  REQUEST = "GET / HTTP/1.1\r\nHost: h\r\n\r\n"
  # LONG_NS in ext/up/ruby/watchdog.c: a call that has run this long gets a thread woken.
  LONG_CALL = 0.05

  def now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  def compute(seconds)
    deadline = now + seconds
    nil while now < deadline
  end

  # The share of the responses served by the thread that served most of them.
  def share_of_busiest(served)
    served.map(&:last).tally.values.max.fdiv(served.size)
  end

  # After a first request, the threads that found nothing to do are asleep: a test that counts
  # threads starts from one awake.
  def settle
    get("/")
    sleep 0.1
  end

  # The bodies of connections x pipelined requests, sent at once and read in order.
  def served_by(connections, pipelined)
    socks = Array.new(connections) do
      connect.tap { |s| s.write(REQUEST * pipelined) }
    end
    socks.flat_map { |s| Array.new(pipelined) { read_response(s).body } }
  end

  # Keeps `connections` connections busy for `seconds`, `depth` requests in flight on each, so
  # that requests are always queued, from a child process (a client sharing this process's GVL
  # would slow the server down to its own pace). Returns [seconds since the start, body] of
  # each response.
  def under_load(seconds, connections: 8, depth: 8)
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      writer.write(Marshal.dump(load_clients(seconds, connections, depth)))
      writer.close
      exit!(0)
    end
    writer.close
    served = Marshal.load(reader.read)
    Process.wait(pid)
    served
  ensure
    reader&.close
  end

  def load_clients(seconds, connections, depth)
    start = now
    socks = Array.new(connections) { connect }
    clients = socks.map do |sock|
      Thread.new do
        sock.write(REQUEST * depth)
        served = []
        loop do
          served << [now - start, read_response(sock).body]
          break if now - start >= seconds

          sock.write(REQUEST)
        end
        (depth - 1).times { read_response(sock) }
        served
      end
    end
    clients.flat_map(&:value)
  end
end
