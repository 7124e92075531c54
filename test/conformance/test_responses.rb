# frozen_string_literal: true

# How every runtime sends what the app returns (Rack 3.2 SPEC, "The Response"): each body kind
# framed as RFC 9112 §6 says, close called on every body, Array header values as separate
# lines, early hints as a 103 (RFC 8297), over real sockets against apps/responses.ru.
require_relative "helper"
require "tempfile"

class TestConformanceResponses < ConformanceTest
  serve "responses.ru"

  def test_array_body_is_sent_whole_with_a_content_length
    res = get("/array")
    assert_equal [200, "abcd"], [res.status, res.body]
    assert_equal "4", res["content-length"]
    assert_nil res["transfer-encoding"]
  end

  # The same app gives the same headers, but date, on every runtime. The server adds
  # only what HTTP needs: date and the framing (keep-alive is HTTP/1.1's default, RFC 9112 §9.3).
  def test_a_keep_alive_response_has_the_apps_headers_plus_only_date_and_framing
    sock = connect
    sock.write("GET /array HTTP/1.1\r\nHost: h\r\n\r\n")
    res = read_response(sock)
    assert_equal %w[content-length content-type date], res.headers.keys.sort
  end

  # Over HTTP/2, DATA frames with no field for the framing (RFC 9113 §8.2.2).
  def test_each_body_is_chunked_and_an_empty_part_does_not_end_it
    res = get("/each")
    assert_equal [200, "one two"], [res.status, res.body]
    assert_equal http2? ? nil : "chunked", res["transfer-encoding"]
  end

  def test_callable_body_is_given_a_stream_and_chunked
    res = get("/call")
    assert_equal [200, "hello streaming world"], [res.status, res.body]
    assert_equal http2? ? nil : "chunked", res["transfer-encoding"]
  end

  def test_to_path_body_sends_the_file
    file = Tempfile.new("up-conformance")
    file.write("file contents\n" * 1000)
    file.flush
    res = get("/to_path?#{file.path}")
    assert_equal 200, res.status
    assert_equal "file contents\n" * 1000, res.body
  ensure
    file&.close!
  end

  # Each kind once: each, to_path, a BodyProxy around an Array (what middleware returns).
  def test_close_is_called_once_on_every_body_that_has_it
    file = Tempfile.new("up-conformance")
    before = closed_count
    ["/each", "/to_path?#{file.path}", "/proxy"].each do |path|
      assert_equal 200, get(path, headers: tagged).status, path
    end
    assert_closed_count_reaches(before + 3)
  ensure
    file&.close!
  end

  def test_head_sends_no_body_and_closes_the_body
    before = closed_count
    sock = connect
    sock.write("HEAD /each HTTP/1.1\r\nHost: h\r\nX-Test-Tag: #{own_tag}\r\nConnection: close\r\n\r\n")
    res = read_response(sock, head: true)
    assert_equal 200, res.status
    if http2?
      assert_empty res.body, "DATA in a HEAD response"
    else
      assert closed_by_server?(sock), "bytes after a HEAD response"
    end
    assert_closed_count_reaches(before + 1)
  end

  def test_array_header_values_are_separate_lines_and_cookies_never_merged
    res = get("/cookies")
    assert_equal ["a=1; path=/", "b=2"], res.headers["set-cookie"]
    assert_equal %w[one two], res.headers["x-multi"]
    assert_includes res.raw, "set-cookie: a=1; path=/\r\nset-cookie: b=2\r\n"
  end

  def test_early_hints_go_out_as_a_103_before_the_response
    sock = connect
    sock.write("GET /hints HTTP/1.1\r\nHost: h\r\n\r\n")
    hints = read_response(sock)
    assert_equal 103, hints.status
    assert_equal ["</a.css>; rel=preload", "</b.js>; rel=preload"], hints.headers["link"]
    assert_equal [200, "after hints"], read_response(sock).then { |res| [res.status, res.body] }
  end

  # RFC 8297 hints are any headers, not only link.
  def test_early_hints_without_a_link_go_out_too
    sock = connect
    sock.write("GET /hints_without_link HTTP/1.1\r\nHost: h\r\n\r\n")
    hints = read_response(sock)
    assert_equal [103, "a"], [hints.status, hints["x-hint"]]
    assert_equal [200, "after hints"], read_response(sock).then { |res| [res.status, res.body] }
  end

  # HTTP/1.0 has no 1xx responses (RFC 9110 §15.2): a 1.0 client gets the response alone.
  def test_an_http_1_0_client_gets_no_early_hints
    sock = connect
    sock.write("GET /hints HTTP/1.0\r\nHost: h\r\n\r\n")
    assert_equal [200, "after hints"], read_response(sock).then { |res| [res.status, res.body] }
  end
end
