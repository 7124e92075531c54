# frozen_string_literal: true

# up_node refuses the requests up_ruby refuses (support/invalid_requests.rb), with the same
# status, a text body, "connection: close" and the close, and the app never sees them. Node's
# parser decides most; node/up_node/request_check.js adds the rest. Where Node keeps too
# little to decide, the answer is listed in KNOWN_GAPS, and the test checks it is still that.
require_relative "helper"
require_relative "support/up_node_process"
require_relative "support/invalid_requests"

class TestUpNodeRequestInvalid < Minitest::Test
  include UpTestHelpers
  include UpNodeProcess

  KNOWN_GAPS = {
    # llhttp reads a request line without a version as HTTP/0.9, the same as "HTTP/0.9".
    "no version" => 505,
    # llhttp accepts it, and Node keeps no raw request line to look at.
    "two spaces after method" => 200
  }.freeze

  def test_refuses_what_up_ruby_refuses_with_the_same_status
    start_up_node
    InvalidRequests::CASES.each do |name, (bytes, status)|
      next if KNOWN_GAPS.key?(name)

      sock = connect
      sock.write(bytes.b)
      res = read_response(sock)
      refute_nil res, "no response to #{name}"
      assert_equal status, res.status, "#{name}: #{res.raw.inspect}"
      assert_equal "close", res["connection"], name
      assert_match(%r{\Atext/plain}, res["content-type"], name)
      refute_empty res.body, name
      assert closed_by_server?(sock), "#{name}: connection left open"
    end
    assert_equal "0", get("/calls").body, "an invalid request reached the app"
  end

  def test_known_gaps_answer_as_documented
    start_up_node
    KNOWN_GAPS.each do |name, status|
      bytes, = InvalidRequests::CASES.fetch(name)
      assert_equal status, raw_request(bytes.b).status, name
    end
  end

  # bytes: a request refused with a 400 and another behind it on the same connection. The
  # connection closes after the 400 and neither reaches the app.
  def assert_refused_and_nothing_served(bytes)
    start_up_node
    sock = connect
    sock.write(bytes)
    assert_equal 400, read_response(sock).status
    assert closed_by_server?(sock)
    assert_equal "0", get("/calls").body
  end

  # Refused by request_check.js: Node parsed it, and the next one too.
  def test_a_request_behind_a_refused_one_is_never_served
    assert_refused_and_nothing_served("GET /x#frag HTTP/1.1\r\nHost: h\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n")
  end

  def test_cl_te_smuggling_attempt_reaches_nothing
    assert_refused_and_nothing_served("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n" \
                                      "0\r\n\r\nGET /admin HTTP/1.1\r\nHost: h\r\n\r\n")
  end

  def test_leading_empty_lines_before_request_line_are_allowed
    start_up_node
    assert_equal 200, raw_request("\r\nGET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n").status
  end
end
