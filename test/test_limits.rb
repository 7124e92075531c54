# frozen_string_literal: true

# Limits and timeouts, each set small so the test is quick: 431 for a big head or too many
# fields (RFC 6585 §5), 413 for a big body before it is read (RFC 9110 §15.5.14), 408 for a
# head or body that trickles in (slowloris), and idle keep-alive connections closed.
require_relative "helper"

class TestLimits < Minitest::Test
  include UpTestHelpers

  def setup
    @calls = 0
    start_server(lambda { |env|
      @calls += 1
      [200, {}, [env["rack.input"].read.bytesize.to_s]]
    }, max_head_size: 1024, max_headers: 10, max_body_size: 1000, head_timeout: 0.5,
       body_timeout: 0.5, keepalive_timeout: 0.5)
  end

  def assert_rejected(res, status, sock)
    assert_equal status, res.status, res.raw
    assert_equal "close", res["connection"]
    assert closed_by_server?(sock)
    assert_equal 0, @calls
  end

  def test_head_over_max_head_size_is_431
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\nX-Big: #{"a" * 2000}\r\n\r\n")
    assert_rejected(read_response(sock), 431, sock)
  end

  def test_endless_head_is_431_without_waiting_for_its_end
    sock = connect
    sock.write("GET /#{"a" * 1100}")
    assert_rejected(read_response(sock), 431, sock)
  end

  def test_too_many_header_fields_is_431
    fields = (1..11).map { |i| "X-#{i}: v\r\n" }.join
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n#{fields}\r\n")
    assert_rejected(read_response(sock), 431, sock)
  end

  def test_content_length_over_limit_is_413_before_reading_body
    sock = connect
    sock.write("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1001\r\n\r\n")
    assert_rejected(read_response(sock), 413, sock)
  end

  def test_expect_continue_over_limit_gets_413_not_100
    sock = connect
    sock.write("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n")
    assert_rejected(read_response(sock), 413, sock)
  end

  def test_chunked_body_growing_over_limit_is_413
    sock = connect
    sock.write("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
    3.times { sock.write("190\r\n#{"x" * 400}\r\n") }
    assert_rejected(read_response(sock), 413, sock)
  end

  def test_body_at_the_limit_is_accepted
    res = raw_request("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n#{"x" * 1000}")
    assert_equal "1000", res.body
  end

  def test_slow_head_gets_408
    sock = connect
    sock.write("GET / HTTP/1.1\r\n")
    sleep 0.2
    sock.write("Host: h\r\n")
    assert_rejected(read_response(sock), 408, sock)
  end

  def test_slowloris_trickle_does_not_extend_head_timeout
    sock = connect
    sock.write("GET / HTTP/1.1\r\n")
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    res = nil
    20.times do
      break if sock.wait_readable(0.1)

      sock.write("X")
    end
    res = read_response(sock)
    assert_rejected(res, 408, sock)
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0, :<, 1.9
  end

  def test_stalled_body_gets_408
    sock = connect
    sock.write("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
    assert_rejected(read_response(sock), 408, sock)
  end

  def test_idle_keep_alive_connection_is_closed_quietly
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    assert_equal 200, read_response(sock).status
    assert closed_by_server?(sock, timeout: 5)
  end

  def test_connection_that_never_sends_is_closed_without_a_response
    sock = connect
    assert closed_by_server?(sock, timeout: 5)
  end
end
