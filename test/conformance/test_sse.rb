# frozen_string_literal: true

# Server-Sent Events through the upgrade API on every runtime (docs/websockets.md;
# the format is the HTML standard's "Server-sent events" section), read over raw sockets
# against apps/sse.ru: rack.upgrade? :sse for Accept: text/event-stream, a 200 head with
# text/event-stream and the app's own fields but no length or chunking, a message's lines as
# several data: lines with event: and id: before them, Last-Event-ID in the env, heartbeats,
# a close from the app ending the stream, a client leaving seen by on_close, and fields that
# would break the framing refused.
require_relative "helper"

class TestConformanceSSE < ConformanceTest
  serve "sse.ru"

  # An event stream read over a raw socket: the head, then what follows it as it comes.
  class Stream
    attr_reader :head

    def initialize(sock)
      @sock = sock
      @buffer = +"".b
      @head = read_until("\r\n\r\n")
    end

    # What came up to and with marker (or until the stream ended, or timeout passed).
    def read_until(marker, timeout: 5)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
      until @buffer.include?(marker)
        left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
        break if left <= 0 || !@sock.wait_readable(left)

        chunk = @sock.read_nonblock(65_536, exception: false)
        break if chunk.nil?

        @buffer << chunk unless chunk == :wait_readable
      end
      at = @buffer.index(marker)
      @buffer.slice!(0, at ? at + marker.bytesize : @buffer.bytesize)
    end

    def ended?
      @sock.read_nonblock(1, exception: false).nil?
    end

    def close
      @sock.close
    end
  end

  # Opens an event stream to path, its Last-Event-ID the test's own tag.
  def stream(path)
    sock = connect
    sock.write("GET #{path} HTTP/1.1\r\nHost: h\r\nAccept: text/event-stream\r\nLast-Event-ID: #{own_tag}\r\n\r\n")
    Stream.new(sock)
  end

  # What the app saw for this test's stream, once it has seen count things (5 s at most).
  def seen(count)
    lines = []
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
    while lines.size < count && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      lines.concat(get("/events").body.split("\n").select { |l| l.end_with?(" #{own_tag}") }.map { |l| l.delete_suffix(" #{own_tag}") })
      sleep 0.02 if lines.size < count
    end
    lines
  end

  def test_the_head_is_an_open_event_stream_with_the_apps_fields
    head = stream("/").head
    assert_match %r{\AHTTP/1.1 200 OK\r\n}, head
    assert_match(%r{^content-type: text/event-stream\r$}i, head, "the stream's own, not the app's")
    assert_match(/^cache-control: no-cache\r$/i, head)
    assert_match(/^x-feed: 1\r$/i, head, "the app's own fields")
    refute_match(/content-length|transfer-encoding/i, head, "the stream ends with the connection")
  end

  def test_events_have_their_fields_and_a_data_line_per_line
    events = stream("/")
    assert_equal "id: 7\nevent: greeting\ndata: line one\ndata: line two\ndata: line three\n\ndata: plain\n\n",
                 events.read_until("data: plain\n\n")
    assert_equal ["open sse"], seen(1), "Last-Event-ID is in the env"
    events.close
    assert_equal ["close"], seen(1), "the client leaving closed it"
  end

  def test_close_from_the_app_ends_the_stream
    events = stream("/bye")
    assert_equal "data: bye\n\n", events.read_until("never")
    assert events.ended?, "then the connection ends"
  end

  def test_heartbeats_keep_a_silent_stream_alive
    start_own_server("sse.ru", "--sse-heartbeat", "1")
    events = stream("/silent")
    assert_equal ":\n\n:\n\n", events.read_until(":\n\n:\n\n", timeout: 4), "a comment each second of silence"
  end

  def test_write_refuses_fields_that_would_break_the_framing
    events = stream("/bad_field")
    assert_equal "", events.read_until("never"), "nothing was sent, and the stream ended"
    assert_equal ["ArgumentError"], seen(1)
  end

  def test_without_accept_the_request_is_plain
    assert_equal "plain", get("/").body
  end
end
