# frozen_string_literal: true

# What every runtime does when the app fails: an exception, raised by the app or by its
# body's each, or a response that breaks the Rack SPEC, is a 500 with a text body that does
# not leak the error, and the server goes on serving, on the same connection when it can.
require_relative "helper"

class TestConformanceErrors < ConformanceTest
  serve "responses.ru"

  def test_app_exception_is_a_logged_500_and_the_connection_keeps_serving
    sock = connect
    sock.write("GET /raise HTTP/1.1\r\nHost: h\r\n\r\n")
    res = read_response(sock)
    assert_equal 500, res.status
    refute_includes res.body, "kaboom"
    sock.write("GET /array HTTP/1.1\r\nHost: h\r\n\r\n")
    assert_equal "abcd", read_response(sock).body
    server.wait_for(/kaboom from the app/)
  end

  def test_exception_in_each_before_anything_is_sent_is_a_500_and_the_body_is_closed
    before = closed_count
    res = get("/raise_in_each", headers: tagged)
    assert_equal 500, res.status
    refute_includes res.body, "never sent"
    assert_closed_count_reaches(before + 1)
    server.wait_for(/kaboom in each/)
  end

  %w[status_word status_out_of_range header_name_with_space header_value_with_newline
     body_part_not_a_string not_a_triple].each do |name|
    define_method("test_invalid_response_#{name}_is_a_500_and_the_server_keeps_serving") do
      res = get("/invalid/#{name}")
      assert_equal 500, res.status, res.raw
      refute_includes res.raw, "evil"
      refute_includes res.raw, "bad name"
      assert_equal "abcd", get("/array").body
    end
  end
end
