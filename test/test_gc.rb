# frozen_string_literal: true

# Every Ruby object the binding holds across calls must be marked and survive compaction:
# requests keep working while GC.compact and GC.stress run in the middle of them.
require_relative "helper"

class TestGC < Minitest::Test
  include UpTestHelpers

  def test_requests_survive_gc_compact_between_and_during_requests
    start_server(lambda { |env|
      GC.compact if env["PATH_INFO"] == "/compact"
      [200, { "x-path" => env["PATH_INFO"] }, ["body:", env["QUERY_STRING"]]]
    }, threads: 2)
    sock = connect
    30.times do |i|
      path = i.even? ? "/compact" : "/plain"
      sock.write("POST #{path}?n=#{i} HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc")
      res = read_response(sock)
      assert_equal "body:n=#{i}", res.body
      assert_equal path, res["x-path"]
      GC.compact if i % 10 == 0
    end
  end

  def test_requests_survive_gc_stress
    start_server(lambda { |env|
      GC.stress = true
      begin
        headers = { "content-type" => "text/plain", "x-q" => env["QUERY_STRING"] }
        [200, headers, [env["rack.input"].read, env["HTTP_X_A"].to_s]]
      ensure
        GC.stress = false
      end
    })
    sock = connect
    5.times do |i|
      sock.write("POST /s?i=#{i} HTTP/1.1\r\nHost: h\r\nX-A: #{i}\r\nContent-Length: 2\r\n\r\nhi")
      res = read_response(sock)
      assert_equal "hi#{i}", res.body
      assert_equal "i=#{i}", res["x-q"]
    end
  end
end
