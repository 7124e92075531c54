# frozen_string_literal: true

# Stopping an in-process Up::Server: a stop is never lost (even one that comes before run),
# in-flight requests get shutdown_timeout in all, not once per app thread, and a listening
# socket the server adopted with listen_fd stays open, since its owner closes it.
require_relative "helper"
require_relative "support/deadline_reads"

class TestShutdown < Minitest::Test
  include UpTestHelpers
  include DeadlineReads

  HELLO = ->(_env) { [200, {}, ["hello"]] }

  # A server made here rather than by start_server, for tests that call run and stop
  # themselves. teardown stops what is still running.
  def new_server(app, **options)
    server = Up::Server.new(app, **options)
    server.log_io = StringIO.new
    (@own_servers ||= []) << server
    server
  end

  def run_in_thread(server)
    Thread.new { server.run }.tap { |t| (@run_threads ||= []) << t }
  end

  def teardown
    (@own_servers || []).each(&:stop)
    (@run_threads || []).each { |t| t.join(10) || t.kill }
    super
  end

  [0, 2].each do |threads|
    define_method("test_stop_before_run_makes_run_return_at_once_with_#{threads}_threads") do
      server = new_server(HELLO, threads: threads)
      server.listen("127.0.0.1", 0)
      server.stop
      runner = run_in_thread(server)
      assert runner.join(3), "run did not return within 3 s of a stop that came before it: the stop was lost"
    end
  end

  # epoll_wait failing for good (here its descriptor is replaced by /dev/null under the loop:
  # EINVAL) is logged once and stops the server, rather than turning into a silent busy loop.
  def test_a_broken_event_loop_is_logged_and_stops_the_server
    before = eventpoll_fds
    server = new_server(HELLO, threads: 1)
    server.log_io = (log = StringIO.new)
    server.listen("127.0.0.1", 0)
    @port = server.addresses.first[1]
    epfd = (eventpoll_fds - before)
    assert_equal 1, epfd.size, "the server's epoll descriptor"
    runner = run_in_thread(server)
    assert_equal "hello", get.body
    File.open("/dev/null") { |null| IO.for_fd(epfd.first, autoclose: false).reopen(null) }
    assert runner.join(10), "run went on with a broken loop"
    assert_equal 1, log.string.scan(/event loop failed: Invalid argument; stopping/).size, log.string
  end

  # The listeners close when a stop begins, while open connections go on: an HTTP/1.0 head
  # without Host that completes after that still gets its listener's address as SERVER_NAME
  # and SERVER_PORT (the engine once freed the listener at the stop and read it afterwards).
  def test_request_completed_after_the_stop_began_gets_the_listener_address
    server = new_server(->(env) { [200, {}, ["#{env["SERVER_NAME"]} #{env["SERVER_PORT"]}"]] }, threads: 1)
    server.listen("127.0.0.1", 0)
    @port = server.addresses.first[1]
    run_in_thread(server)
    sock = connect
    sock.write("GET / HTTP/1.0\r\n")
    # Accepted in order: once a later connection is answered, the first one was taken.
    assert_equal "127.0.0.1 #{@port}", raw_request("GET / HTTP/1.0\r\n\r\n").body
    server.stop
    wait_until_refused(@port)
    sock.write("\r\n")
    assert_equal "127.0.0.1 #{@port}", read_response(sock).body
  end

  # Each app thread sleeps far longer than shutdown_timeout; the stop must give them
  # shutdown_timeout (1 s) in all, then end run.
  def test_stop_ends_run_within_one_shutdown_timeout_whatever_the_thread_count
    in_app = Queue.new
    server = start_server(lambda { |_env|
      in_app << true
      sleep 20
      [200, {}, ["late"]]
    }, threads: 3, shutdown_timeout: 1)
    3.times { connect.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n") }
    3.times { in_app.pop } # all three app threads are asleep in the app
    t0 = monotonic_now
    server.stop(timeout: 30)
    took = monotonic_now - t0
    assert_operator took, :<, 3, "run took #{took.round(2)} s to return after stop with shutdown_timeout 1 " \
                                 "(3 app threads: about 1 s plus a margin is right, 4 s is one timeout per thread)"
  end

  # At the deadline the requests still in the app are cut off: their threads are killed, and
  # the connections they give back on the way out are closed, not left open for ever.
  def test_connections_of_requests_cut_off_at_the_deadline_are_closed
    in_app = Queue.new
    server = start_server(lambda { |_env|
      in_app << true
      sleep 20
      [200, {}, ["late"]]
    }, threads: 2, shutdown_timeout: 0.5)
    socks = Array.new(2) { connect.tap { |s| s.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n") } }
    2.times { in_app.pop }
    server.stop(timeout: 10)
    socks.each do |sock|
      raw = "".b
      closed = read_until_eof(sock, raw, 3)
      assert closed, "a connection cut off at the deadline was left open; read #{raw.inspect}"
      assert_match(%r{\AHTTP/1\.1 503 }, raw, "the request cut off is answered 503 when nothing was sent")
    end
  end

  # stop(0), QUIT's stop: the requests in the app are cut off now, not after shutdown_timeout.
  def test_stop_with_a_timeout_of_0_cuts_off_requests_in_flight_at_once
    in_app = Queue.new
    server = start_server(lambda { |_env|
      in_app << true
      sleep 20
      [200, {}, ["late"]]
    }, threads: 2, shutdown_timeout: 30)
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    in_app.pop
    t0 = monotonic_now
    server.server.stop(0)
    raw = "".b
    assert read_until_eof(sock, raw, 5), "the request in flight was not cut off"
    assert_match(%r{\AHTTP/1\.1 503 }, raw, "the request cut off is answered 503 when nothing was sent")
    server.stop(timeout: 5)
    assert_operator monotonic_now - t0, :<, 3
  end

  def test_a_later_stop_only_brings_the_deadline_nearer
    in_app = Queue.new
    server = start_server(lambda { |_env|
      in_app << true
      sleep 20
      [200, {}, ["late"]]
    }, threads: 1, shutdown_timeout: 0.5)
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    in_app.pop
    t0 = monotonic_now
    server.server.stop
    server.server.stop(60)
    server.stop(timeout: 10)
    assert_operator monotonic_now - t0, :<, 3
  end

  # The cluster master shuts its listening sockets down at a final stop, so the kernel refuses
  # new connections at once; a worker whose loop still watches one sees accept fail (EINVAL)
  # and must stop accepting on it quietly, neither spin nor log an error.
  def test_a_listening_socket_shut_down_by_its_owner_is_refused_and_not_an_error
    listener = TCPServer.new("127.0.0.1", 0)
    @port = listener.local_address.ip_port
    server = new_server(HELLO, threads: 1)
    log = StringIO.new
    server.log_io = log
    server.listen_fd(listener.fileno)
    runner = run_in_thread(server)
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    assert_equal "hello", read_response_within(sock, 5, "a request before the shutdown").body
    listener.shutdown(Socket::SHUT_RDWR)
    assert_raises(Errno::ECONNREFUSED) { TCPSocket.new("127.0.0.1", @port) }
    sleep 0.2 # the loop turns on the shut-down listener (a tick, at most) before the stop
    server.stop
    assert runner.join(5), "run did not return after stop"
    assert_equal "", log.string
  ensure
    listener&.close
  end

  # listen_fd adopts a socket someone else owns (Ruby's TCPServer here, the cluster master's
  # sockets in a worker). Closing it on stop leaves the owner holding a number that the next
  # open may reuse, and the owner's close then closes someone else's file.
  def test_stop_leaves_an_adopted_listening_socket_open
    listener = TCPServer.new("127.0.0.1", 0)
    fd = listener.fileno
    identity = File.readlink("/proc/self/fd/#{fd}") # "socket:[inode]"
    server = new_server(HELLO, threads: 0)
    server.listen_fd(fd)
    @port = listener.local_address.ip_port
    runner = run_in_thread(server)
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    assert_equal "hello", read_response_within(sock, 5, "a request through the adopted socket").body
    sock.close
    server.stop
    assert runner.join(5), "run did not return after stop"

    now = begin
      File.readlink("/proc/self/fd/#{fd}")
    rescue Errno::ENOENT
      "nothing (the fd was closed)"
    end
    assert_equal identity, now, "fd #{fd} after stop"
    assert_equal @port, listener.local_address.ip_port
    # The socket still takes connections; its owner can accept them.
    client = connect
    client.write("x") # the byte makes it acceptable even with TCP_DEFER_ACCEPT set on it
    assert listener.wait_readable(5), "the adopted socket no longer takes connections"
    listener.accept.close
  ensure
    begin
      listener&.close
    rescue IOError, SystemCallError
      nil # the server closed it under us: the failure above says so
    end
  end

  # The same socket, adopted by a server that is never run and then garbage collected: freeing
  # the server must not close it either. (This shows the bug only when GC does collect the
  # server, which it does here: nothing refers to it once adopt_and_drop returns.)
  def test_a_collected_server_leaves_an_adopted_listening_socket_open
    listener = TCPServer.new("127.0.0.1", 0)
    fd = listener.fileno
    identity = File.readlink("/proc/self/fd/#{fd}")
    adopt_and_drop(fd)
    3.times { GC.start }
    now = begin
      File.readlink("/proc/self/fd/#{fd}")
    rescue Errno::ENOENT
      "nothing (the fd was closed)"
    end
    assert_equal identity, now, "fd #{fd} after the server that adopted it was collected"
  ensure
    begin
      listener&.close
    rescue IOError, SystemCallError
      nil
    end
  end

  def adopt_and_drop(fd)
    Up::Server.new(HELLO, threads: 0).listen_fd(fd)
    nil
  end

  private

  def eventpoll_fds
    Dir.children("/proc/self/fd").select do |fd|
      File.readlink("/proc/self/fd/#{fd}") == "anon_inode:[eventpoll]"
    rescue SystemCallError
      false
    end.map(&:to_i)
  end

  # Returns once connecting to port is refused: the server closed its listener.
  def wait_until_refused(port, timeout: 5)
    limit = monotonic_now + timeout
    loop do
      TCPSocket.new("127.0.0.1", port).close
      raise "port #{port} still accepts #{timeout} s after the stop" if monotonic_now > limit

      sleep 0.01
    rescue Errno::ECONNREFUSED
      return
    end
  end
end
