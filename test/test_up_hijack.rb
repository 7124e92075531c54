# frozen_string_literal: true

# rack.hijack on `up` (Rack 3.2 SPEC, "Hijacking"; test/rackup/hijack.ru), over real sockets,
# as test/test_hijack.rb holds up_ruby to it:
# - full hijack: the app gets the socket and speaks on it after its call returned; the server
#   writes nothing and ignores the response; the bytes pipelined after the request are the app's;
# - partial hijack and a 101 with a callable body: the server's head (never reused, unframed),
#   then the callable gets the socket and streams both ways;
# - the engine forgets a hijacked connection: no descriptor is left once the app or the client
#   closed, a graceful stop does not wait for one, and every worker of -w 2 hijacks;
# - no hijack over TLS, as on up_ruby: rack.hijack? false, and a partial hijack is a 500.
require_relative "helper"
require_relative "support/deadline_reads"
require_relative "support/test_certificates"
require_relative "support/up_process"

class TestUpHijack < Minitest::Test
  include UpTestHelpers
  include UpProcess
  include DeadlineReads

  APP = "test/rackup/hijack.ru"
  READ_DEADLINE = 5

  def start_hijack(*args)
    start_up(*args, APP)
  end

  # The raw bytes a client gets for request, sending after (then its end) once the head came.
  def exchange(request, after = nil, until_text: "\r\n\r\n")
    sock = connect
    sock.write(request)
    raw = +""
    if after
      assert read_until(sock, raw, until_text, READ_DEADLINE), "no #{until_text.inspect} before the client spoke: #{raw.inspect}"
      sock.write(after)
      sock.close_write
    end
    assert read_until_eof(sock, raw, READ_DEADLINE), "the app did not close: #{raw.inspect}"
    raw
  end

  def head_of(raw)
    raw[0, raw.index("\r\n\r\n") + 4]
  end

  # ------------------------------------------------------------ full hijack

  def test_full_hijack_gives_the_app_the_socket_and_ignores_its_response
    start_hijack
    sock = connect
    # "early" follows the request at once: it came on the socket the app takes, so it is the app's.
    sock.write("GET /echo HTTP/1.1\r\nHost: h\r\n\r\nearly\n")
    raw = +""
    assert read_until(sock, raw, "echo: early\n", READ_DEADLINE), "the app did not get the pipelined line: #{raw.inspect}"
    sock.write("second\n")
    assert read_until(sock, raw, "echo: second\n", READ_DEADLINE), raw
    sock.close_write
    assert read_until_eof(sock, raw, READ_DEADLINE), raw
    assert_equal "HTTP/1.1 200 OK\r\nconnection: close\r\nx-same-io: true\r\n\r\necho: early\necho: second\n", raw,
                 "only the app wrote (no head, length or body of the server's); the same IO each call and in rack.hijack_io"
  end

  def test_full_and_partial_hijack_under_rack_lint
    start_hijack
    raw = exchange("GET /lint/echo HTTP/1.1\r\nHost: h\r\n\r\nlint\n", "", until_text: "echo: lint\n")
    assert raw.end_with?("x-same-io: true\r\n\r\necho: lint\n"), raw
    raw = exchange("GET /lint/write HTTP/1.1\r\nHost: h\r\n\r\n")
    assert raw.end_with?("\r\n\r\npartial written\n"), raw
  end

  def test_rack_hijack_refuses_once_the_request_is_over
    start_hijack
    assert_equal "kept", get("/late").body
    assert_equal "IOError: rack.hijack called after the request was over", get("/late2").body
  end

  # ------------------------------------------------------------ partial hijack, 101

  def test_partial_hijack_writes_the_head_then_hands_the_socket_to_the_callable
    start_hijack
    raw = exchange("GET /partial HTTP/1.1\r\nHost: h\r\n\r\n", "world\n", until_text: "hello ")
    head = head_of(raw)
    assert_match(%r{\AHTTP/1\.1 200 OK\r\n}, head)
    assert_includes head, "content-type: text/plain\r\n"
    assert_includes head, "connection: close\r\n", "a hijacked connection is never reused"
    refute_match(/content-length|transfer-encoding|rack\.hijack/i, head, "no framing, no rack. header")
    assert_equal "#{head}hello world\n", raw
  end

  # The parts go out as written, before the client says anything; then the app reads it.
  def test_partial_hijack_streams_both_ways
    start_hijack
    raw = exchange("GET /stream HTTP/1.1\r\nHost: h\r\n\r\n", "more\n", until_text: "part 2\n")
    assert raw.end_with?("\r\n\r\npart 0\npart 1\npart 2\npart 3\n"), raw
  end

  def test_101_with_a_callable_body_streams_both_ways_after_the_head
    start_hijack
    sock = connect
    sock.write("GET /upgrade HTTP/1.1\r\nHost: h\r\nUpgrade: lines\r\nConnection: upgrade\r\n\r\none\n")
    raw = +""
    assert read_until(sock, raw, "got one\n", READ_DEADLINE), raw
    assert_match(%r{\AHTTP/1\.1 101 Switching Protocols\r\nupgrade: lines\r\nconnection: upgrade\r\n}, raw)
    sock.write("two\n")
    sock.close_write
    assert read_until_eof(sock, raw, READ_DEADLINE), raw
    assert raw.end_with?("\r\n\r\ngot one\ngot two\n"), raw
  end

  def test_a_callable_that_raises_is_logged_and_its_socket_closed
    server = start_hijack
    raw = exchange("GET /raise HTTP/1.1\r\nHost: h\r\n\r\n")
    assert_match(%r{\AHTTP/1\.1 200 OK\r\n.*\r\n\r\n\z}m, raw, "the head, then the close")
    server.wait_for(%r{error in GET /raise: .*broken callable})
  end

  # ------------------------------------------------------------ the engine lets go

  # Hijacks the app closes, and hijacks whose client goes first (before the hand-over, or while
  # the app waits for a line): the worker holds as many descriptors after as before.
  def test_many_hijacks_and_clients_closing_early_leave_no_descriptor_behind
    server = start_hijack
    pid = server.output[/listening on .*\(pid (\d+)/, 1].to_i
    exchange("GET /echo HTTP/1.1\r\nHost: h\r\n\r\nwarm up\n", "")
    before = open_fds(pid)
    20.times { |i| assert exchange("GET /echo HTTP/1.1\r\nHost: h\r\n\r\n#{i}\n", "").end_with?("echo: #{i}\n") }
    10.times do
      sock = connect
      sock.write("GET /echo HTTP/1.1\r\nHost: h\r\n\r\n")
      sock.close
      sock = connect
      sock.write("GET /partial HTTP/1.1\r\nHost: h\r\n\r\n")
      assert read_until(sock, +"", "hello ", READ_DEADLINE)
      sock.close
    end
    assert wait_until { open_fds(pid) <= before }, "descriptors of the worker: #{before} before, #{open_fds(pid)} after"
    assert_equal "true true", get("/env").body, "the worker goes on serving"
  end

  # The engine forgot the connection: numConns leaves it out, so TERM does not wait for the app
  # to close it (--shutdown-timeout 30 would hold the stop that long).
  def test_a_hijacked_connection_does_not_hold_up_a_graceful_stop
    server = start_hijack("--shutdown-timeout", "30")
    sock = connect
    sock.write("GET /echo HTTP/1.1\r\nHost: h\r\n\r\nstill here\n")
    assert read_until(sock, +"", "echo: still here\n", READ_DEADLINE)
    started = monotonic_now
    server.signal("TERM")
    assert server.wait(timeout: 20).success?, server.output
    assert_operator monotonic_now - started, :<, 10, "the stop waited for the hijacked connection"
    assert_match(/up stopped/, server.output)
  end

  def test_every_worker_hijacks
    server = start_hijack("-w", "2")
    [0, 1].each { |i| server.wait_for(/worker #{i} \(pid \d+\) booted/) }
    12.times do |i|
      assert exchange("GET /echo HTTP/1.1\r\nHost: h\r\n\r\nw#{i}\n", "").end_with?("echo: w#{i}\n")
      assert exchange("GET /partial HTTP/1.1\r\nHost: h\r\n\r\n", "w#{i}\n", until_text: "hello ").end_with?("hello w#{i}\n")
    end
  end

  # ------------------------------------------------------------ TLS

  # As up_ruby: the TLS session lives in the engine, so the socket alone is of no use to the
  # app. No rack.hijack, rack.hijack? false, and a response that hands the connection to a
  # callable anyway is the app's error: a 500 and a log line.
  def test_no_hijack_over_tls
    cert = TestCertificates.ca.issue("localhost")
    server = start_up("-s", "-c", cert.cert_file, "-k", cert.key_file, APP)
    ssl = OpenSSL::SSL::SSLSocket.new(connect, TestCertificates.ca.client_context)
    ssl.sync_close = true
    ssl.hostname = "localhost"
    ssl.connect
    ssl.write("GET /env HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert_equal "false false", read_response(ssl).body
    ssl.write("GET /partial HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert_equal 500, read_response(ssl).status
    server.wait_for(/cannot be hijacked \(TLS/)
  ensure
    ssl&.close
  end

  private

  def open_fds(pid)
    Dir.children("/proc/#{pid}/fd").size
  end

  def wait_until(seconds = READ_DEADLINE)
    deadline = monotonic_now + seconds
    until (ok = yield)
      return false if monotonic_now > deadline

      sleep 0.02
    end
    ok
  end
end
