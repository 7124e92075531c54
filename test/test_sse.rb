# frozen_string_literal: true

# Server-Sent Events through the upgrade API (docs/websockets.md) on up_ruby, read
# by curl, a real client: rack.upgrade? :sse for Accept: text/event-stream, the 200 head, a
# message with line breaks as several data: lines, event: and id:, Last-Event-ID in the env,
# heartbeats, the client's close seen by on_close, and close from the app.
require "open3"
require_relative "helper"

class TestSSE < Minitest::Test
  include UpTestHelpers

  class Feed
    attr_reader :events

    def initialize(events)
      @events = events
    end

    def on_open(client)
      @events << [:open, client.protocol, client.env["HTTP_LAST_EVENT_ID"]]
      client.write("line one\nline two", event: "greeting", id: 7)
      client.write("plain")
    end

    def on_close(_client)
      @events << [:close]
    end
  end

  def sse_app(handler)
    lambda do |env|
      return [200, {}, ["plain"]] unless env["rack.upgrade?"] == :sse

      env["rack.upgrade"] = handler
      [200, { "x-feed" => "1", "content-type" => "text/plain" }, []]
    end
  end

  # curl -N streams what arrives; it reads until the server ends the stream or max_time.
  def curl(*args, max_time: 3)
    out, _err, _status = Open3.capture3("curl", "-sS", "-N", "-i", "--max-time", max_time.to_s, *args)
    out
  end

  def test_events_reach_curl_with_their_fields
    events = Queue.new
    start_server(sse_app(Feed.new(events)))
    out = curl("-H", "Accept: text/event-stream", "-H", "Last-Event-ID: 6", "http://127.0.0.1:#{@port}/feed", max_time: 1)
    assert_match %r{\AHTTP/1.1 200 OK\r\n}, out
    assert_match(/^content-type: text\/event-stream\r$/, out, "ours, not the app's")
    assert_match(/^x-feed: 1\r$/, out, "the app's own fields")
    refute_match(/content-length|transfer-encoding/i, out)
    assert_includes out, "\r\n\r\nid: 7\nevent: greeting\ndata: line one\ndata: line two\n\ndata: plain\n\n"
    assert_equal [:open, :sse, "6"], events.pop
    assert_equal [:close], Timeout.timeout(5) { events.pop }, "curl leaving closed it"
  end

  # The loop looks at these timers once a second, so a second is their grain.
  def test_heartbeats_keep_a_silent_stream_alive
    start_server(sse_app(Object.new), sse_heartbeat: 1)
    out = curl("-H", "Accept: text/event-stream", "http://127.0.0.1:#{@port}/", max_time: 3.5)
    assert_operator out.scan(":\n\n").size, :>=, 2, "heartbeat comments: #{out.inspect}"
  end

  def test_close_from_the_app_ends_the_stream
    handler = Class.new do
      def on_open(client)
        client.write("bye")
        client.close
      end
    end.new
    start_server(sse_app(handler))
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    out = curl("-H", "Accept: text/event-stream", "http://127.0.0.1:#{@port}/", max_time: 5)
    assert out.end_with?("data: bye\n\n"), out.inspect
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0, :<, 4, "ended by the server, not curl's timeout"
  end

  def test_write_refuses_fields_that_would_break_framing
    results = Queue.new
    handler = Class.new do
      define_method(:on_open) do |client|
        results << (begin; client.write("x", event: "two\nlines"); rescue ArgumentError => e; e.class; end)
        client.close
      end
    end.new
    start_server(sse_app(handler))
    curl("-H", "Accept: text/event-stream", "http://127.0.0.1:#{@port}/")
    assert_equal ArgumentError, results.pop
  end

  def test_without_accept_the_request_is_plain
    start_server(sse_app(Object.new))
    assert_equal "plain", get("/").body
  end
end
