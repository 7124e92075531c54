# frozen_string_literal: true

# Every Ruby object the binding holds across calls must be marked and survive compaction:
# requests keep working while GC.compact and GC.stress run in the middle of them.
require_relative "helper"
require "rack"

class TestGC < Minitest::Test
  include UpTestHelpers

  # Under GC.stress every allocation runs a whole collection: on a loaded two-core machine the
  # request path test alone can take most of a minute.
  def time_limit_seconds
    180
  end

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

  # An each body with a close, as most non-Array bodies have.
  class EachBody
    def initialize(parts)
      @parts = parts
    end

    def each(&block)
      @parts.each(&block)
    end

    def close; end
  end

  # One route per body kind; every request also reads rack.input and registers a
  # rack.response_finished callback.
  BODY_KINDS = {
    "/array" => ->(tag) { ["array:", tag] },
    "/each" => ->(tag) { EachBody.new(["each:", tag]) },
    "/proxy" => ->(tag) { Rack::BodyProxy.new(["proxy:", tag]) { tag.dup } },
    "/stream" => ->(tag) { ->(stream) { stream.write("stream:"); stream << tag; stream.close } }
  }.freeze

  # GC.stress is process-wide: turned on in the test thread just before a request is written
  # and off once its response is read, it runs a GC at every allocation while the server
  # reads the request, builds the env, calls the app, walks the body and runs the callbacks,
  # unlike test_requests_survive_gc_stress, whose app turns it off before the body is walked.
  def test_gc_stress_over_the_whole_request_path_for_every_body_kind
    finished = Queue.new
    app = lambda do |env|
      input = env["rack.input"]
      tag = +"#{input.read(2)}|#{input.gets}|#{input.read}"
      input.rewind
      tag << "|" << input.each.to_a.join << "|" << env["HTTP_X_TAG"] << "|" << env["QUERY_STRING"]
      env["rack.response_finished"] << ->(e, status, _h, error) { finished << [e["PATH_INFO"], status, error] }
      [200, { "content-type" => "text/plain", "x-path" => env["PATH_INFO"] }, BODY_KINDS.fetch(env["PATH_INFO"]).call(tag)]
    end
    [0, 2].each do |threads|
      start_server(app, threads: threads)
      sock = connect
      BODY_KINDS.each_key.with_index do |path, i|
        payload = "ab\nline2\nrest#{i}"
        request = "POST #{path}?i=#{i} HTTP/1.1\r\nHost: h\r\nX-Tag: t#{i}\r\n" \
                  "Content-Length: #{payload.bytesize}\r\n\r\n#{payload}"
        begin
          GC.stress = true
          sock.write(request)
          res = read_response(sock)
        ensure
          GC.stress = false
        end
        kind = path.delete("/")
        expected = "#{kind}:ab|\n|line2\nrest#{i}|ab\nline2\nrest#{i}|t#{i}|i=#{i}"
        assert_equal expected, res.body, "threads #{threads}, #{path}"
        assert_equal path, res["x-path"]
        assert_equal [path, 200, nil], Timeout.timeout(5) { finished.pop }, "threads #{threads}: rack.response_finished"
      end
    end
  end
end
