# frozen_string_literal: true

# Every request the engine must refuse, sent as raw bytes, with the exact status it gets, a
# text body, "connection: close", and the close itself; and the app never sees any of them.
# The requests and the RFC sections they break: support/invalid_requests.rb.
require_relative "helper"
require_relative "support/invalid_requests"

class TestRequestInvalid < Minitest::Test
  include UpTestHelpers

  H = InvalidRequests::H
  CASES = InvalidRequests::CASES

  def setup
    @calls = 0
    start_server(lambda { |_env|
      @calls += 1
      [200, {}, ["app"]]
    })
  end

  CASES.each do |name, (bytes, status)|
    define_method("test_rejects_#{name.downcase.gsub(/[^a-z0-9]+/, "_")}") do
      sock = connect
      sock.write(bytes.b)
      res = read_response(sock)
      refute_nil res, "no response to #{name}"
      assert_equal status, res.status, "#{name}: #{res.raw.inspect}"
      assert_equal "close", res["connection"]
      assert_match(%r{\Atext/plain}, res["content-type"])
      refute_empty res.body
      assert closed_by_server?(sock), "#{name}: connection left open"
      assert_equal 0, @calls, "#{name} reached the app"
    end
  end

  # After a 400 the server reads and drops what the client still sends for a while (a
  # lingering close, so the 400 is not lost to a reset). A client that keeps sending fast is
  # closed once it has sent about a megabyte (the engine's UP_LINGER_MAX_BYTES plus what the
  # socket buffers hold), not left draining until the 2 s linger timeout, and meanwhile
  # another client's keep-alive requests are answered.
  def test_client_flooding_a_lingering_close_is_cut_off_and_holds_up_nobody
    flooder = connect
    flooder.write("GET / HTTP/1.1\r\n#{H}X-A : b\r\n\r\n")
    assert_equal 400, read_response(flooder).status
    sent = 0
    ended = nil
    writer = Thread.new do
      junk = "x" * 65_536
      while sent < 256 * 1024 * 1024
        sent += flooder.write(junk)
      end
    rescue Errno::EPIPE, Errno::ECONNRESET => e
      ended = e
    end
    other = connect
    20.times do
      other.write("GET / HTTP/1.1\r\n#{H}\r\n")
      assert_equal "app", read_response(other).body
    end
    writer.join
    refute_nil ended, "the flooder was never closed (#{sent} bytes sent)"
    assert_operator sent, :<, 64 * 1024 * 1024, "the server drained #{sent} bytes before closing"
  end

  def test_valid_request_after_invalid_one_on_same_connection_is_never_served
    sock = connect
    sock.write("GET / HTTP/1.1\r\n#{H}X-A : b\r\n\r\nGET /smuggled HTTP/1.1\r\n#{H}\r\n")
    assert_equal 400, read_response(sock).status
    assert closed_by_server?(sock)
    assert_equal 0, @calls
  end

  def test_cl_te_smuggling_attempt_reaches_nothing
    sock = connect
    sock.write("POST / HTTP/1.1\r\n#{H}Content-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n" \
               "0\r\n\r\nGET /admin HTTP/1.1\r\n#{H}\r\n")
    assert_equal 400, read_response(sock).status
    assert closed_by_server?(sock)
    assert_equal 0, @calls
  end

  def test_leading_empty_lines_before_request_line_are_allowed
    res = raw_request("\r\nGET / HTTP/1.1\r\n#{H}Connection: close\r\n\r\n")
    assert_equal 200, res.status
    assert_equal 1, @calls
  end
end
