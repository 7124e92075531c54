# frozen_string_literal: true

# The timeouts every runtime enforces, set to a second so the tests are quick: a head or a
# body that never ends gets a 408 and the close (slowloris), an idle keep-alive connection is
# closed without a response. Only the outcome is asserted, not when it comes: up_node checks
# its timers at most once a second.
require_relative "helper"

class TestConformanceTimeouts < ConformanceTest
  serve "http.ru", "--head-timeout", "1", "--body-timeout", "1", "--keepalive-timeout", "1"

  # Over HTTP/2 the 408 ends its stream only (docs/http2.md, "Limits").
  def assert_timed_out(sock)
    res = read_response(sock)
    assert_equal 408, res&.status, res&.raw
    assert closed_by_server?(sock) unless http2?
  end

  def test_a_head_that_never_ends_is_408
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n")
    assert_timed_out(sock)
  end

  def test_a_body_that_stops_short_is_408
    sock = connect
    sock.write("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
    assert_timed_out(sock)
  end

  def test_an_idle_keep_alive_connection_is_closed_without_a_response
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    assert_equal 200, read_response(sock).status
    assert closed_by_server?(sock, timeout: 10)
  end
end
