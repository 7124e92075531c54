# frozen_string_literal: true

# Bytes reach the client as the app makes them: a streamed part is on the wire before the body
# makes the next one (each bodies and Rack 3 streaming bodies, inline and with app threads),
# a pipelined response is not held until the next request's app call returns, and a stream
# written by several Ruby threads stays well framed (RFC 9112 §7.1) and whole.
#
# Ordering is made with a Queue between the app and the test: the app blocks on it after part
# one, and the test pushes to it only once it has read part one from the socket. A server that
# holds part one back makes the test's bounded read come back empty, and the test fails with
# a message; the ensure blocks release the app either way, so the server can stop.
require_relative "helper"
require_relative "support/deadline_reads"

class TestStreaming < Minitest::Test
  include UpTestHelpers
  include DeadlineReads

  # How long a part may take to reach the client. Generous: the point is "before the app goes
  # on", which without the fix is never.
  PART_DEADLINE = 3

  def request_line(path = "/")
    "GET #{path} HTTP/1.1\r\nHost: h\r\n\r\n"
  end

  # An each body that yields part one, waits for the test, then yields part two.
  class GatedEachBody
    def initialize(gate)
      @gate = gate
    end

    def each
      yield "event 1\n"
      @gate.pop
      yield "event 2\n"
    end
  end

  # Serves body_for.call(gate), asks for it, and checks that part one is readable while the
  # app waits on the gate, then that the whole body arrives once the gate opens.
  def assert_first_part_arrives_before_the_second_is_made(threads, first, whole, &body_for)
    gate = Queue.new
    start_server(->(_env) { [200, {}, body_for.call(gate)] }, threads: threads)
    sock = connect
    sock.write(request_line)
    raw = "".b
    arrived = read_until(sock, raw, first, PART_DEADLINE)
    assert arrived, "threads #{threads}: #{first.inspect} did not reach the client within " \
                    "#{PART_DEADLINE} s while the body waited to make the next part; got #{raw.inspect}"
    gate << :go
    assert read_until(sock, raw, "0\r\n\r\n", PART_DEADLINE), "threads #{threads}: the body did not end; got #{raw.inspect}"
    head, body = split_chunked_response(raw)
    assert_match %r{\AHTTP/1\.1 200}, head
    assert_equal whole, body, "threads #{threads}"
  ensure
    gate&.push(:go)
  end

  # ------------------------------------------------------------ each bodies

  def test_each_body_part_reaches_the_client_before_the_next_is_made_with_one_thread
    assert_first_part_arrives_before_the_second_is_made(1, "event 1\n", "event 1\nevent 2\n") do |gate|
      GatedEachBody.new(gate)
    end
  end

  def test_each_body_part_reaches_the_client_before_the_next_is_made_with_app_threads
    assert_first_part_arrives_before_the_second_is_made(2, "event 1\n", "event 1\nevent 2\n") do |gate|
      GatedEachBody.new(gate)
    end
  end

  # ------------------------------------------------------------ streaming bodies

  # No flush: a write is a write (Rack 3 SPEC, "Streaming Body": the stream is IO-like).
  def streaming_body(gate)
    lambda do |stream|
      stream.write("a")
      gate.pop
      stream.write("b")
      stream.close
    end
  end

  def test_stream_write_reaches_the_client_without_flush_with_one_thread
    # "1\r\na\r\n" is the first chunk: the part is on the wire, framed.
    assert_first_part_arrives_before_the_second_is_made(1, "1\r\na\r\n", "ab") { |gate| streaming_body(gate) }
  end

  def test_stream_write_reaches_the_client_without_flush_with_app_threads
    assert_first_part_arrives_before_the_second_is_made(2, "1\r\na\r\n", "ab") { |gate| streaming_body(gate) }
  end

  # ------------------------------------------------------------ pipelining

  [1, 2].each do |threads|
    define_method("test_pipelined_response_is_sent_before_the_next_app_call_returns_with_#{threads}_threads") do
      gate = Queue.new
      start_server(lambda { |env|
        gate.pop if env["PATH_INFO"] == "/blocked"
        [200, {}, [env["PATH_INFO"]]]
      }, threads: threads)
      sock = connect
      sock.write(request_line("/fast") + request_line("/blocked"))
      first = read_response_within(sock, PART_DEADLINE,
                                   "the response to /fast while the pipelined /blocked was still in the app")
      assert_equal "/fast", first.body
      gate << :go
      assert_equal "/blocked", read_response_within(sock, PART_DEADLINE, "the response to /blocked").body
    ensure
      gate&.push(:go)
    end
  end

  # ------------------------------------------------------------ one stream, several writers

  RECORD_SIZE = 1000
  RECORDS_PER_WRITER = 2000

  # "w1 000123 ....\n", RECORD_SIZE bytes: who wrote it and its place in that writer's order.
  def self.record(writer, index)
    "w#{writer} #{format("%06d", index)} ".ljust(RECORD_SIZE - 1, ".") << "\n"
  end

  # The race needs both writers inside the server at once, which a run does not always
  # bring about; three responses in a row make a miss unlikely.
  def test_two_threads_writing_one_stream_keep_the_framing_and_every_record_whole
    start_server(lambda { |_env|
      [200, {}, lambda { |stream|
        writers = [1, 2].map do |w|
          Thread.new { RECORDS_PER_WRITER.times { |i| stream.write(TestStreaming.record(w, i)) } }
        end
        writers.each(&:join)
        stream.close
      }]
    }, threads: 2)
    3.times { |round| assert_two_writers_response_whole(round) }
  end

  def assert_two_writers_response_whole(round)
    sock = Socket.new(:INET, :STREAM)
    sock.setsockopt(Socket::SOL_SOCKET, Socket::SO_RCVBUF, 16_384) # so the server waits for us
    sock.connect(Socket.sockaddr_in(@port, "127.0.0.1"))
    (@sockets ||= []) << sock
    sock.write(request_line)
    raw = read_slowly_until_chunked_end(sock)
    body = begin
      split_chunked_response(raw)[1]
    rescue ArgumentError => e
      flunk "response #{round + 1}: the chunked framing does not parse: #{e.message}"
    end
    assert_equal 2 * RECORDS_PER_WRITER * RECORD_SIZE, body.bytesize, "response #{round + 1}: body size"
    seen = { "1" => [], "2" => [] }
    body.scan(/.{#{RECORD_SIZE}}/mo).each_with_index do |rec, n|
      m = rec.match(/\Aw([12]) (\d{6}) \.+\n\z/) or
        flunk "response #{round + 1}: record #{n} is torn: #{rec[0, 40].inspect}...#{rec[-20..].inspect}"
      seen[m[1]] << m[2].to_i
    end
    # Each writer's records arrive whole and in the order it wrote them.
    assert_equal (0...RECORDS_PER_WRITER).to_a, seen["1"], "response #{round + 1}: writer 1's records"
    assert_equal (0...RECORDS_PER_WRITER).to_a, seen["2"], "response #{round + 1}: writer 2's records"
    sock.close
  end

  # Reads 16 KB at a time with a short pause between reads, so the server's socket fills and
  # both writers end up waiting for the client at once; at most 60 s in all.
  def read_slowly_until_chunked_end(sock)
    raw = "".b
    deadline = monotonic_now + 60
    until raw.end_with?("\r\n0\r\n\r\n")
      left = deadline - monotonic_now
      flunk "the response did not end within 60 s (#{raw.bytesize} bytes read)" if left <= 0
      flunk "nothing more within 10 s (#{raw.bytesize} bytes read)" unless sock.wait_readable([left, 10].min)
      chunk = sock.read_nonblock(16_384, exception: false)
      flunk "the server closed the connection after #{raw.bytesize} bytes" if chunk.nil?
      next if chunk == :wait_readable

      raw << chunk
      sleep 0.005
    end
    raw
  end
end
