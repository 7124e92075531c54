# frozen_string_literal: true

# A client that takes its response slowly, or not at all for a while, holds up nobody else:
# the bytes it has not taken wait in its output queue (up to a limit, then its producer
# waits, that thread alone), another thread serves the other requests, and the slow client
# still gets every byte once it reads. With one app thread, that thread is the producer: other
# requests wait for it, and run as soon as the slow client reads.
require_relative "helper"
require_relative "support/deadline_reads"

class TestSlowClients < Minitest::Test
  include UpTestHelpers
  include DeadlineReads

  BIG_PARTS = 20
  PART_SIZE = 1024 * 1024

  # 20 MiB in 1 MiB parts, each of one letter, so a lost or repeated part shows.
  BIG = Array.new(BIG_PARTS) { |i| ((65 + i).chr * PART_SIZE).freeze }.freeze

  # An each body with no to_ary, so it is walked part by part.
  class EachBody
    def initialize(parts)
      @parts = parts
    end

    def each(&block)
      @parts.each(&block)
    end
  end

  # Each kind of body the app may answer with; all of them are 20 MiB the client must get whole.
  BODIES = {
    "array" => ->(_env) { BIG.dup },
    "each" => ->(_env) { EachBody.new(BIG) },
    "array_with_response_finished" => lambda { |env|
      env["rack.response_finished"] << ->(*) {}
      BIG.dup
    },
    "streaming" => ->(_env) { ->(stream) { BIG.each { |part| stream.write(part) }; stream.close } }
  }.freeze

  BODIES.each do |kind, body_for|
    define_method("test_a_client_that_reads_nothing_of_a_big_#{kind}_body_holds_up_no_other_request") do
      start_server(lambda { |env|
        [200, { "content-type" => "text/plain" }, env["PATH_INFO"] == "/big" ? body_for.call(env) : ["small"]]
      }, threads: 2, write_timeout: 3)
      stalled = connect
      stalled.write("GET /big HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
      # Its response has begun: the server is now sitting on 20 MiB the client does not take.
      assert stalled.wait_readable(5), "no byte of /big within 5 s"

      t0 = monotonic_now
      other = connect
      other.write("GET /small HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
      res = read_response_within(other, 5, "/small while another client stalls on /big")
      took = monotonic_now - t0
      assert_equal "small", res.body
      assert_operator took, :<, 1, "/small took #{took.round(2)} s while another client read nothing " \
                                   "of the #{kind} body (write_timeout 3 s)"

      big = read_response_within(stalled, 10, "the 20 MiB of /big")
      assert_equal BIG_PARTS * PART_SIZE, big.body.bytesize, "bytes of /big received"
      assert big.body == BIG.join, "the body of /big is not what the app gave"
    end
  end

  def test_with_one_thread_a_request_waits_for_a_slow_reader_then_runs
    start_server(lambda { |env|
      [200, {}, env["PATH_INFO"] == "/big" ? EachBody.new(BIG) : ["small"]]
    }, threads: 1, write_timeout: 10)
    stalled = connect
    stalled.write("GET /big HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    assert stalled.wait_readable(5), "no byte of /big within 5 s"
    other = connect
    other.write("GET /small HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    refute other.wait_readable(0.5), "/small was answered while the only thread fed /big"
    big = read_response_within(stalled, 10, "the 20 MiB of /big")
    assert big.body == BIG.join, "the body of /big is not what the app gave"
    assert_equal "small", read_response_within(other, 5, "/small once /big was taken").body
  end
end
