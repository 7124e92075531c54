# frozen_string_literal: true

# Requests every runtime must refuse, each with its status, "connection: close", a text body
# and the close itself, without calling the app: the limits (RFC 6585 §5 431 for a head over
# --max-head-size or over --max-headers fields, RFC 9110 §15.5.14 413 for a body over
# --max-body-size, before it is read) and every malformed request of
# test/support/invalid_requests.rb (RFC 9112, cited there). Against apps/http.ru, whose /calls
# says how many requests reached it.
require_relative "helper"
require_relative "../support/invalid_requests"

class TestConformanceLimits < ConformanceTest
  serve "http.ru", "--max-head-size", "1024", "--max-headers", "10", "--max-body-size", "1000"

  def app_calls
    Integer(get("/calls").body)
  end

  # Sends bytes on a new connection (in parts, one write each, when given an Array) and
  # asserts the refusal. A server may refuse before the last part: it need not read the rest.
  def assert_refused(bytes, status, what = bytes.inspect)
    calls = app_calls
    sock = connect
    begin
      Array(bytes).each { |part| sock.write(part.b) }
    rescue Errno::EPIPE
      nil
    end
    res = read_response(sock)
    refute_nil res, "#{what}: closed without a response"
    assert_equal status, res.status, "#{what}: #{res.raw.inspect}"
    assert_match(%r{\Atext/plain}, res["content-type"], what)
    refute_empty res.body, what
    if http2?
      # A refused stream ends alone (RFC 9113 §8.1): the connection has no field to close it.
      assert_nil res["connection"], what
    else
      assert_equal "close", res["connection"]&.downcase, "#{what}: no connection: close"
      assert closed_by_server?(sock), "#{what}: connection left open"
    end
    assert_equal calls, app_calls, "#{what} reached the app"
  end

  def test_head_over_max_head_size_is_431
    assert_refused("GET / HTTP/1.1\r\nHost: h\r\nX-Big: #{"a" * 2000}\r\n\r\n", 431)
  end

  def test_request_line_over_max_head_size_is_431
    assert_refused("GET /#{"a" * 2000} HTTP/1.1\r\nHost: h\r\n\r\n", 431)
  end

  # Eleven fields besides Host: more than --max-headers over either protocol (HTTP/2 carries
  # Host as :authority, a pseudo-header field).
  def test_more_fields_than_max_headers_is_431
    assert_refused("GET / HTTP/1.1\r\nHost: h\r\n#{(1..11).map { |i| "X-#{i}: v\r\n" }.join}\r\n", 431)
  end

  def test_content_length_over_max_body_size_is_413_before_the_body_is_sent
    assert_refused("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1001\r\n\r\n", 413)
  end

  def test_expect_continue_over_max_body_size_is_413_without_a_100
    assert_refused("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n", 413)
  end

  def test_chunked_body_growing_over_max_body_size_is_413
    chunk = "190\r\n#{"x" * 400}\r\n"
    assert_refused(["POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", chunk, chunk, chunk], 413)
  end

  def test_body_at_max_body_size_is_served
    res = raw_request("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n#{"x" * 1000}")
    assert_equal [200, "POST /? #{"x" * 1000}"], [res.status, res.body]
  end

  def test_head_at_max_headers_is_served
    res = raw_request("GET / HTTP/1.1\r\nHost: h\r\n#{(1..8).map { |i| "X-#{i}: v\r\n" }.join}Connection: close\r\n\r\n")
    assert_equal 200, res.status
  end

  InvalidRequests::CASES.each do |name, (bytes, status)|
    define_method("test_rejects_#{name.downcase.gsub(/[^a-z0-9]+/, "_")}_with_#{status}") do
      assert_refused(bytes, status, name)
    end
  end

  # What was sent after a refused request on the same connection is never served.
  def test_request_after_a_refused_one_on_the_same_connection_is_never_served
    assert_refused("GET / HTTP/1.1\r\nHost: h\r\nX-A : b\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n", 400)
  end

  # Refused once parsed (a fragment in the target: node/up_node/request_check.js on Node): what
  # came behind it is not served either.
  def test_request_after_one_refused_for_its_target_is_never_served
    assert_refused("GET /x#frag HTTP/1.1\r\nHost: h\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n", 400)
  end

  def test_cl_te_smuggling_attempt_reaches_nothing
    assert_refused("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n" \
                   "0\r\n\r\nGET /admin HTTP/1.1\r\nHost: h\r\n\r\n", 400)
  end
end
