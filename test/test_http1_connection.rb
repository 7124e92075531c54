# frozen_string_literal: true

# Connection handling over real sockets (RFC 9112 §9): keep-alive, pipelining, HTTP/1.0,
# Expect: 100-continue, request bodies in odd splits and a byte at a time.
require_relative "helper"

class TestHTTP1Connection < Minitest::Test
  include UpTestHelpers

  ECHO = lambda do |env|
    body = env["rack.input"].read
    [200, { "content-type" => "text/plain", "x-path" => env["PATH_INFO"] },
     ["#{env["REQUEST_METHOD"]} #{env["PATH_INFO"]}?#{env["QUERY_STRING"]} #{body}"]]
  end

  def setup
    start_server(ECHO)
  end

  def test_hello_world_has_status_date_and_length
    res = get("/hello?x=1")
    assert_equal 200, res.status
    assert_equal "OK", res.reason
    assert_equal "GET /hello?x=1 ", res.body
    assert_equal res.body.bytesize.to_s, res["content-length"]
    assert_match(/\A\w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT\z/, res["date"])
    assert_equal "close", res["connection"]
  end

  def test_keep_alive_serves_many_requests_on_one_connection
    sock = connect
    10.times do |i|
      sock.write("GET /#{i} HTTP/1.1\r\nHost: x\r\n\r\n")
      res = read_response(sock)
      assert_equal 200, res.status
      assert_equal "GET /#{i}? ", res.body
      assert_nil res["connection"]
    end
  end

  def test_hundred_pipelined_requests_in_one_write_are_answered_in_order
    sock = connect
    sock.write((0...100).map { |i| "GET /#{i} HTTP/1.1\r\nHost: x\r\n\r\n" }.join)
    100.times do |i|
      res = read_response(sock)
      assert_equal "GET /#{i}? ", res.body
    end
  end

  def test_pipelined_requests_with_bodies_do_not_mix
    sock = connect
    reqs = (0...20).map do |i|
      body = "body-#{i}-" + ("x" * i)
      "POST /#{i} HTTP/1.1\r\nHost: x\r\nContent-Length: #{body.bytesize}\r\n\r\n#{body}"
    end
    sock.write(reqs.join)
    20.times do |i|
      assert_equal "POST /#{i}? body-#{i}-#{"x" * i}", read_response(sock).body
    end
  end

  def test_http10_closes_after_response_unless_keep_alive
    sock = connect
    sock.write("GET /a HTTP/1.0\r\n\r\n")
    res = read_response(sock)
    assert_equal 200, res.status
    assert_equal "close", res["connection"]
    assert closed_by_server?(sock)
  end

  def test_http10_keep_alive_is_honoured
    sock = connect
    2.times do
      sock.write("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
      res = read_response(sock)
      assert_equal 200, res.status
      assert_equal "keep-alive", res["connection"]
    end
  end

  def test_connection_close_request_closes_after_response
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert_equal 200, read_response(sock).status
    assert closed_by_server?(sock)
  end

  def test_chunked_request_body_with_extensions_and_trailers
    sock = connect
    sock.write("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" \
               "5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: yes\r\n\r\n")
    assert_equal "POST /c? hello world", read_response(sock).body
  end

  def test_chunked_body_sent_in_odd_splits
    payload = "5\r\nhello\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n"
    [1, 2, 3, 7].each do |step|
      sock = connect
      sock.write("POST /s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
      payload.bytes.each_slice(step) { |s| sock.write(s.pack("C*")); sock.flush }
      assert_equal "POST /s? helloabcdefghijklmnopqrstuvwxyz", read_response(sock).body, "step #{step}"
    end
  end

  def test_request_sent_one_byte_at_a_time
    sock = connect
    "POST /slow?q=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd".each_char do |c|
      sock.write(c)
      sock.flush
    end
    assert_equal "POST /slow?q=1 abcd", read_response(sock).body
  end

  def test_expect_100_continue_gets_interim_response_before_body
    sock = connect
    sock.write("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
    assert_equal "HTTP/1.1 100 Continue\r\n", sock.gets("\r\n")
    assert_equal "\r\n", sock.gets("\r\n")
    sock.write("hello")
    assert_equal "POST /e? hello", read_response(sock).body
  end

  def test_client_half_close_still_gets_answers
    sock = connect
    sock.write("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
    sock.close_write
    assert_equal "GET /1? ", read_response(sock).body
    assert_equal "GET /2? ", read_response(sock).body
    assert closed_by_server?(sock)
  end

  def test_head_response_has_length_but_no_body
    sock = connect
    sock.write("HEAD /h HTTP/1.1\r\nHost: x\r\n\r\nGET /g HTTP/1.1\r\nHost: x\r\n\r\n")
    head = read_response(sock, head: true)
    assert_equal 200, head.status
    assert_equal "HEAD /h? ".bytesize.to_s, head["content-length"]
    assert_equal "GET /g? ", read_response(sock).body
  end
end
