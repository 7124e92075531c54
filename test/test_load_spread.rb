# frozen_string_literal: true

# A request waits for the app only when every thread that could take it is busy: with the
# default settings (-t 5) four slow calls leave room for a fast one, and in a cluster a worker
# whose only thread is busy leaves new connections to a worker that is idle, as Puma's do.
# Connections held open (keep-alive, WebSocket, SSE) spread over the workers too, whether they
# come one after another or all at once: each one asks test/rackup/pid.ru which worker serves
# it and stays open, so the count per pid is what each worker holds.
require_relative "helper"
require_relative "support/cli_process"
require_relative "support/deadline_reads"
require_relative "support/up_process"

class TestLoadSpread < Minitest::Test
  include UpTestHelpers
  include DeadlineReads

  APP = "test/rackup/slow_fast.ru"
  PID_APP = "test/rackup/pid.ru"
  HELD = 400

  def teardown
    super
    @cli&.stop
  end

  def request_on_new_connection(path, what)
    sock = TCPSocket.new("127.0.0.1", @port)
    sock.write("GET #{path} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    read_response_within(sock, 5, what)
  ensure
    sock&.close
  end

  # No -t: the CLI's default of 5 app threads, in one process.
  def test_four_slow_requests_leave_room_for_a_fast_one_with_default_settings
    @cli = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", APP)
    @port = @cli.port
    slow = Array.new(4) { connect.tap { |s| s.write("GET /slow HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n") } }
    @cli.wait_for(/(app: \/slow started.*?){4}/m, timeout: 5) # all four are in the app
    t0 = monotonic_now
    fast = request_on_new_connection("/fast", "/fast while four /slow are in the app")
    took = monotonic_now - t0
    assert_equal "/fast", fast.body
    assert_operator took, :<, 0.2, "/fast took #{took.round(3)} s with four of the default five threads busy"
    slow.each { |s| assert_equal "/slow", read_response_within(s, 5, "a /slow response").body }
  end

  # For about 4 s one client asks for /slow (1 s in the app) again and again, each time on a
  # new connection, while another asks for /fast every 50 ms, also on new connections. With
  # two workers of one thread each, one of them is always free for /fast.
  def test_fast_requests_go_to_the_idle_worker_while_the_other_serves_a_slow_one
    @cli = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "2", "-t", "1", APP)
    @port = @cli.port
    2.times { |i| @cli.wait_for(/worker #{i} booted/) }
    stop_at = monotonic_now + 4
    slow_client = Thread.new do
      n = 0
      while monotonic_now < stop_at
        assert_equal "/slow", request_on_new_connection("/slow", "/slow").body
        n += 1
      end
      n
    end
    # Each /fast starts 50 ms after the one before, whether or not that one was answered, so
    # one that waits does not thin out the sample.
    fast_clients = []
    next_at = monotonic_now
    while next_at < stop_at
      fast_clients << Thread.new do
        t0 = monotonic_now
        assert_equal "/fast", request_on_new_connection("/fast", "/fast").body
        monotonic_now - t0
      end
      next_at += 0.05
      pause = next_at - monotonic_now
      sleep pause if pause.positive? # pacing, not ordering
    end
    fast_times = fast_clients.map(&:value)
    slow_count = slow_client.value
    quick = fast_times.count { |t| t < 0.2 }
    summary = "#{quick} of #{fast_times.size} /fast answered in under 200 ms while #{slow_count} /slow ran " \
              "(slowest #{fast_times.max.round(3)} s, median #{fast_times.sort[fast_times.size / 2].round(3)} s)"
    assert_operator slow_count, :>=, 3, summary
    assert_operator quick, :>=, (fast_times.size * 0.8).ceil, summary
  end

  def test_connections_opened_one_after_another_spread_over_two_workers
    start_cluster(2)
    held = Array.new(HELD) { worker_of(open_held) }
    assert_each_worker_holds(held, 2, 0.3..0.7, "opened one after another")
  end

  def test_connections_opened_in_a_burst_spread_over_two_workers
    start_cluster(2)
    assert_each_worker_holds(burst, 2, 0.3..0.7, "opened in a burst")
  end

  # The same on `up`: its workers share the sockets through the engine on Node's loop.
  def test_up_spreads_connections_opened_one_after_another_over_two_workers
    start_cluster(2, command: [RbConfig.ruby, UpProcess::EXE])
    held = Array.new(HELD) { worker_of(open_held) }
    assert_each_worker_holds(held, 2, 0.3..0.7, "opened one after another on up")
  end

  def test_up_spreads_connections_opened_in_a_burst_over_two_workers
    start_cluster(2, command: [RbConfig.ruby, UpProcess::EXE])
    assert_each_worker_holds(burst, 2, 0.3..0.7, "opened in a burst on up")
  end

  def test_no_worker_of_four_holds_more_than_twice_its_share
    start_cluster(4)
    sequential = Array.new(HELD) { worker_of(open_held) }
    assert_each_worker_holds(sequential, 4, 0.0..0.5, "opened one after another")
    close_sockets
    assert_each_worker_holds(burst, 4, 0.0..0.5, "opened in a burst")
  end

  private

  # up_ruby by default; its log says "worker 0 booted (pid N)", up's "worker 0 (pid N) booted".
  def start_cluster(workers, command: [RbConfig.ruby, CLIProcess::EXE])
    @cli = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", workers.to_s, "-t", "1", PID_APP,
                          command: command, env: { "XDG_CACHE_HOME" => UpProcess::CACHE })
    @port = @cli.port
    booted = /worker \d+ (?:\(pid (\d+)\) booted|booted \(pid (\d+)\))/
    @cli.wait_for(/(#{booted}.*?){#{workers}}/m)
    @workers = @cli.output.scan(booted).flatten.compact
  end

  # A keep-alive connection with its request sent.
  def open_held
    connect.tap { |s| s.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n") }
  end

  # The pid of the worker that answered on sock, which stays open.
  def worker_of(sock)
    response = read_response_within(sock, 10, "the pid of the worker holding a connection")
    assert_equal "200", response.status.to_s
    response.body
  end

  # HELD connections connected first, then their requests written back to back, so that they
  # reach the workers within a few milliseconds; the pid behind each one.
  def burst
    socks = Array.new(HELD) { connect }
    socks.each { |s| s.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n") }
    socks.map { |s| worker_of(s) }
  end

  def assert_each_worker_holds(pids, workers, share, what)
    counts = pids.tally
    summary = "#{pids.size} connections #{what} over #{workers} workers: #{counts.values.sort.inspect} " \
              "(#{counts.inspect}; workers #{@workers.inspect})"
    assert_empty counts.keys - @workers, summary
    @workers.each do |pid|
      assert_includes share, counts.fetch(pid, 0).fdiv(pids.size), summary
    end
  end
end
