# frozen_string_literal: true

# HTTP/1.1 semantics every runtime must share (RFC 9112 §6 framing, §9 connection management;
# RFC 9110 §9.3.2 HEAD, §10.1.1 Expect, §15.3.5 and §15.4.5 no-body statuses), and bodies
# that are large or binary both ways, over real sockets against apps/http.ru.
require_relative "helper"

class TestConformanceHTTP < ConformanceTest
  serve "http.ru"

  def test_get_is_answered_with_status_date_and_content_length
    res = get("/hello?x=1")
    assert_equal [200, http2? ? "" : "OK"], [res.status, res.reason], "HTTP/2 has no reason phrase"
    assert_equal "GET /hello?x=1 ", res.body
    assert_equal res.body.bytesize.to_s, res["content-length"]
    assert_match(/\A\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT\z/, res["date"])
  end

  def test_post_body_reaches_the_app
    res = raw_request("POST /form HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\nConnection: close\r\n\r\nhello world")
    assert_equal "POST /form? hello world", res.body
  end

  # The HEAD is pipelined ahead of a GET: a body sent for it would show up as the start of
  # the GET's response.
  def test_head_response_has_the_get_content_length_but_no_body
    sock = connect
    sock.write("HEAD /h HTTP/1.1\r\nHost: h\r\n\r\nGET /g HTTP/1.1\r\nHost: h\r\n\r\n")
    head = read_response(sock, head: true)
    assert_equal 200, head.status
    assert_equal "HEAD /h? ".bytesize.to_s, head["content-length"]
    assert_equal "GET /g? ", read_response(sock).body
  end

  # Same trick: the app gives a body with 204 and 304, the server must not send it.
  %w[no_content 204 not_modified 304].each_slice(2) do |path, status|
    define_method("test_#{status}_response_has_no_body") do
      sock = connect
      sock.write("GET /#{path} HTTP/1.1\r\nHost: h\r\n\r\nGET /after HTTP/1.1\r\nHost: h\r\n\r\n")
      res = read_response(sock)
      assert_equal Integer(status), res.status
      assert_nil res["content-length"]
      assert_nil res["transfer-encoding"]
      assert_equal "GET /after? ", read_response(sock).body, "the #{status}'s body leaked into the next response"
    end
  end

  def test_array_body_gets_a_content_length
    res = get("/array")
    assert_equal "GET /array? ".bytesize.to_s, res["content-length"]
    assert_nil res["transfer-encoding"]
  end

  # Over HTTP/2, DATA frames until END_STREAM, with no field for the framing (RFC 9113 §8.2.2).
  def test_each_body_of_unknown_length_is_chunked
    res = get("/each")
    assert_equal http2? ? nil : "chunked", res["transfer-encoding"]
    assert_nil res["content-length"]
    assert_equal "onetwothree", res.body
  end

  def test_each_body_on_http10_is_close_delimited
    sock = connect
    sock.write("GET /each HTTP/1.0\r\n\r\n")
    res = read_response(sock)
    assert_nil res["transfer-encoding"]
    assert_equal "onetwothree", res.body
  end

  def test_keep_alive_serves_many_requests_on_one_connection
    sock = connect
    5.times do |i|
      sock.write("GET /#{i} HTTP/1.1\r\nHost: h\r\n\r\n")
      assert_equal "GET /#{i}? ", read_response(sock).body
    end
  end

  def test_pipelined_requests_with_bodies_are_answered_in_order
    sock = connect
    sock.write((0...20).map { |i| "POST /#{i} HTTP/1.1\r\nHost: h\r\nContent-Length: #{i + 1}\r\n\r\n#{"x" * (i + 1)}" }.join)
    20.times { |i| assert_equal "POST /#{i}? #{"x" * (i + 1)}", read_response(sock).body }
  end

  # RFC 9112 §2.2: a server should ignore at least one empty line before the request line.
  def test_empty_lines_before_the_request_line_are_ignored
    res = raw_request("\r\nGET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    assert_equal 200, res.status
  end

  # RFC 9110 §15's names, which differ from older RFCs' (and Node's table) for 413 and 422.
  def test_status_lines_carry_rfc9110_reason_phrases
    { 200 => "OK", 404 => "Not Found", 413 => "Content Too Large", 422 => "Unprocessable Content",
      503 => "Service Unavailable" }.each do |status, reason|
      res = get("/status/#{status}")
      assert_equal [status, reason], [res.status, res.reason]
    end
  end

  def test_connection_close_request_closes_after_the_response
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    res = read_response(sock)
    assert_equal 200, res.status
    assert_equal "close", res["connection"]
    assert closed_by_server?(sock)
  end

  def test_http10_closes_after_the_response
    sock = connect
    sock.write("GET /a HTTP/1.0\r\n\r\n")
    res = read_response(sock)
    assert_equal [200, "GET /a? "], [res.status, res.body]
    assert closed_by_server?(sock)
  end

  def test_http10_keep_alive_is_honoured
    sock = connect
    2.times do
      sock.write("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
      res = read_response(sock)
      assert_equal 200, res.status
      assert_equal "keep-alive", res["connection"].downcase
    end
  end

  def test_chunked_request_body_with_extensions_and_trailers_is_decoded
    sock = connect
    sock.write("POST /c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" \
               "5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\n")
    assert_equal "POST /c? hello world", read_response(sock).body
  end

  def test_request_sent_one_byte_at_a_time_is_served
    sock = connect
    "POST /slow?q=1 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\n\r\n".each_char do |c|
      sock.write(c)
      sock.flush
    end
    assert_equal "POST /slow?q=1 abcd", read_response(sock).body
  end

  def test_expect_100_continue_gets_an_interim_response_before_the_body
    sock = connect
    sock.write("POST /e HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
    interim = read_response(sock)
    assert_equal 100, interim.status
    assert_equal "HTTP/1.1 100 Continue\r\n\r\n", interim.raw unless http2?
    sock.write("hello")
    assert_equal "POST /e? hello", read_response(sock).body
  end

  def test_client_half_close_still_gets_its_answers
    sock = connect
    sock.write("GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\n")
    sock.close_write
    assert_equal "GET /1? ", read_response(sock).body
    assert_equal "GET /2? ", read_response(sock).body
    assert closed_by_server?(sock)
  end

  def test_each_body_with_a_content_length_from_the_app_is_not_chunked
    res = get("/each_with_length")
    assert_equal "11", res["content-length"]
    assert_nil res["transfer-encoding"]
    assert_equal "onetwothree", res.body
  end

  # Every byte value, so no runtime may treat the body as text on the way in or out.
  def test_binary_request_body_comes_back_byte_for_byte
    body = (0..255).map(&:chr).join.b * 4
    res = raw_request("POST /raw HTTP/1.1\r\nHost: h\r\nContent-Length: #{body.bytesize}\r\nConnection: close\r\n\r\n#{body}".b)
    assert_equal body.bytesize.to_s, res["content-length"]
    assert res.body.b == body, "the body came back changed"
  end

  def test_large_request_body_reaches_the_app_whole
    body = (0...1_048_576).map { |i| (97 + (i % 26)).chr }.join
    sock = connect
    sock.write("POST /raw HTTP/1.1\r\nHost: h\r\nContent-Length: #{body.bytesize}\r\n\r\n")
    sock.write(body)
    res = read_response(sock)
    assert_equal 200, res.status
    assert res.body == body, "the body came back changed"
  end

  def test_large_each_body_is_delivered_whole
    res = get("/big")
    assert_equal 64 * 65_536, res.body.bytesize
    assert res.body == (0...64).map { |i| (97 + (i % 26)).chr * 65_536 }.join, "the body came out changed"
  end
end
