# frozen_string_literal: true

# HTTP/2 receive flow control on up_ruby (RFC 9113 §5.2, §6.9): the windows reopen only as
# request bodies are taken (kept in memory within a bound, or written to a spool file), so a
# client cannot make a connection hold more than the windows say; DATA past a window is
# FLOW_CONTROL_ERROR; each stream has its own body timeout; a body past max_body_size is a 413
# and a reset before it is read. Frames by hand (support/h2_frames.rb, h2_case_client.rb) for
# what the windows say, curl and nghttp for real uploads.
require "digest"
require "open3"
require "socket"
require "tmpdir"
require_relative "helper"
require_relative "support/h2_frames"
require_relative "support/h2_case_client"

class TestHTTP2Flow < Minitest::Test
  include UpTestHelpers

  # What the server advertises (ext/up/engine/http2/http2.h).
  STREAM_WINDOW = 256 * 1024
  CONNECTION_WINDOW = 1024 * 1024
  FRAME = 16_384

  def app
    lambda do |env|
      body = env["rack.input"].read
      [200, { "content-type" => "text/plain" }, ["#{body.bytesize} #{Digest::SHA256.hexdigest(body)}"]]
    end
  end

  def url(path)
    "http://127.0.0.1:#{@port}#{path}"
  end

  def frames
    @socket = connect
    H2Frames.new(@socket)
  end

  def post(h2, stream, fields = {})
    h2.write_frame(:headers, H2Frames::END_HEADERS, stream, h2.header_block("/upload", fields, method: "POST"))
  end

  # Uploads each of bodies ({ stream => bytes }) at once, frames in turn, never past the windows
  # the server gave (read from its SETTINGS and WINDOW_UPDATEs); after every WINDOW_UPDATE the
  # window open to the client must be within the bound. Returns { stream => response body }.
  def upload_within_windows(h2, bodies)
    connection = 65_535
    streams = bodies.to_h { |id, _| [id, 65_535] }
    sent = bodies.to_h { |id, _| [id, 0] }
    responses = Hash.new { |hash, key| hash[key] = +"" }
    ended = []
    take = lambda do |frame|
      case H2Frames::TYPES.key(frame.type)
      when :settings
        if frame.flags.nobits?(H2Frames::ACK)
          initial = frame.settings[H2Frames::SETTINGS[:initial_window_size]]
          streams.transform_values! { |w| w + initial - 65_535 } if initial
          h2.write_frame(:settings, H2Frames::ACK, 0, "")
        end
      when :window_update
        increment = frame.payload.unpack1("N")
        if frame.stream.zero?
          connection += increment
          assert_operator connection, :<=, CONNECTION_WINDOW, "the connection's window"
        elsif streams.key?(frame.stream)
          streams[frame.stream] += increment
          assert_operator streams[frame.stream], :<=, STREAM_WINDOW, "stream #{frame.stream}'s window"
        end
      when :data
        responses[frame.stream] << frame.payload
        ended << frame.stream if frame.flags.anybits?(H2Frames::END_STREAM)
      when :rst_stream, :goaway
        flunk "#{H2Frames::TYPES.key(frame.type)} #{frame.error_code} on #{frame.stream}"
      end
    end
    bodies.each_key { |id| post(h2, id) }
    until ended.size == bodies.size
      ready = bodies.keys.select { |id| sent[id] < bodies[id].bytesize && [connection, streams[id]].min.positive? }
      if ready.empty? || readable?
        frame = h2.read_frame(timeout: 10)
        flunk "the connection closed" if frame.nil?
        take.call(frame)
        next
      end
      ready.each do |id|
        size = [FRAME, connection, streams[id], bodies[id].bytesize - sent[id]].min
        next unless size.positive?

        last = sent[id] + size == bodies[id].bytesize
        h2.write_frame(:data, last ? H2Frames::END_STREAM : 0, id, bodies[id].byteslice(sent[id], size))
        sent[id] += size
        connection -= size
        streams[id] -= size
      end
    end
    responses
  end

  def readable?
    @socket.wait_readable(0)
  end

  def expected(body)
    "#{body.bytesize} #{Digest::SHA256.hexdigest(body)}"
  end

  # The server's first flight: SETTINGS_INITIAL_WINDOW_SIZE and a WINDOW_UPDATE that opens the
  # connection's window to its bound.
  def test_the_windows_are_advertised
    start_server(app)
    h2 = frames
    settings = h2.read_until { |frame| frame.type == H2Frames::TYPES[:settings] }.settings
    assert_equal STREAM_WINDOW, settings[H2Frames::SETTINGS[:initial_window_size]]
    update = h2.read_until { |frame| frame.type == H2Frames::TYPES[:window_update] }
    assert_equal [0, CONNECTION_WINDOW - 65_535], [update.stream, update.payload.unpack1("N")]
  end

  # Three uploads at once on one connection, each larger than every window and than the
  # memory a connection keeps: they arrive whole, and the windows the server opens never pass
  # their bounds.
  def test_parallel_uploads_arrive_whole_within_the_windows
    start_server(app, threads: 2)
    h2 = frames
    bodies = { 1 => Random.bytes(3 * 1024 * 1024 + 7), 3 => Random.bytes(1024 * 1024), 5 => Random.bytes(200_000) }
    responses = upload_within_windows(h2, bodies)
    assert_equal bodies.transform_values { |body| expected(body) }, responses
  end

  # Bytes kept in memory keep their window closed: a client that sends a stream's whole window
  # and one byte more, without a WINDOW_UPDATE for it, gets FLOW_CONTROL_ERROR (§6.9.1).
  def test_data_past_a_stream_window_is_a_flow_control_error
    start_server(app, spool_threshold: 4 * 1024 * 1024)
    h2 = frames
    h2.read_until { |frame| frame.type == H2Frames::TYPES[:settings] && frame.flags.nobits?(H2Frames::ACK) }
    post(h2, 1)
    left = STREAM_WINDOW - 1
    while left.positive?
      size = [FRAME, left].min
      h2.write_frame(:data, 0, 1, "a" * size)
      left -= size
    end
    h2.write_frame(:data, 0, 1, "bb")
    reset = h2.read_until(timeout: 5) do |frame|
      [H2Frames::TYPES[:rst_stream], H2Frames::TYPES[:goaway]].include?(frame.type) ||
        (frame.type == H2Frames::TYPES[:window_update] && frame.stream == 1)
    end
    refute_nil reset
    refute_equal H2Frames::TYPES[:window_update], reset.type, "bytes kept in memory reopened the stream's window"
    assert_equal 0x3, reset.error_code, "FLOW_CONTROL_ERROR"
  end

  # Each stream has its own body timeout: a stream whose body stalls gets a 408 while another
  # stream of the connection keeps sending, and that one is answered whole.
  def test_a_stalled_stream_gets_408_while_another_keeps_sending
    start_server(app, body_timeout: 0.6)
    h2 = frames
    post(h2, 1)
    h2.write_frame(:data, 0, 1, "part of a body")
    post(h2, 3)
    sent = +""
    stalled = nil
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 3
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      h2.write_frame(:data, 0, 3, "tick")
      sent << "tick"
      sleep 0.1
      while readable?
        frame = h2.read_frame
        flunk "the connection closed" if frame.nil?
        refute_equal 3, frame.stream, "the stream that keeps sending was answered early" if frame.type == H2Frames::TYPES[:data]
        stalled ||= frame.payload if frame.type == H2Frames::TYPES[:data] && frame.stream == 1
      end
    end
    assert_equal "Request Timeout\n", stalled, "the stalled stream got no 408 while the other sent"
    h2.write_frame(:data, H2Frames::END_STREAM, 3, "end")
    sent << "end"
    data = h2.read_until(timeout: 5) { |frame| frame.type == H2Frames::TYPES[:data] && frame.stream == 3 }
    assert_equal expected(sent), data.payload
  end

  # A content-length past max_body_size: a 413 and a reset of the stream before a byte of the
  # body is read; the connection goes on.
  def test_a_declared_body_past_max_body_size_is_413_and_reset
    start_server(app, max_body_size: 100_000)
    client = H2CaseClient.new(connect, scheme: "http")
    fields = client.request_fields("/upload", method: "POST", extra: [["content-length", "10000000"]])
    client.headers(1, fields, end_stream: false)
    response = client.response(1)
    assert_equal "413", response.status
    reset = client.stream_reset(1)
    assert_equal [:rst_stream, 1], [reset.type, reset.stream]
    client.headers(3, client.request_fields("/after"))
    assert_equal "0 #{Digest::SHA256.hexdigest("")}", client.response(3).body
  end

  # A body without a content-length that grows past max_body_size: a 413 and a reset once it
  # passes, not once it is all read; the connection goes on.
  def test_a_body_growing_past_max_body_size_is_413_and_reset
    start_server(app, max_body_size: 100_000)
    client = H2CaseClient.new(connect, scheme: "http")
    client.headers(1, client.request_fields("/upload", method: "POST"), end_stream: false)
    7.times { client.data(1, "x" * FRAME, end_stream: false) }
    response = client.response(1)
    assert_equal "413", response.status
    reset = client.stream_reset(1)
    assert_equal [:rst_stream, 1], [reset.type, reset.stream]
    client.headers(3, client.request_fields("/after"))
    assert_equal "0 #{Digest::SHA256.hexdigest("")}", client.response(3).body
  end

  # Real clients: curl uploads a file larger than the windows, nghttp uploads it on several
  # streams of one connection at once; every body reaches the app intact.
  def test_curl_and_nghttp_uploads_arrive_intact
    start_server(app, threads: 2)
    Dir.mktmpdir do |dir|
      path = File.join(dir, "big")
      body = Random.bytes(5 * 1024 * 1024 + 3)
      File.binwrite(path, body)
      out, err, status = Open3.capture3("curl", "-sS", "--max-time", "20", "--http2-prior-knowledge",
                                        "--data-binary", "@#{path}", url("/upload"))
      assert status.success?, err
      assert_equal expected(body), out
      out, status = Open3.capture2e("nghttp", "-t", "20", "-d", path, url("/a"), url("/b"), url("/c"), url("/d"))
      assert status.success?, out
      assert_equal [expected(body)] * 4, out.scan(/\d+ \h{64}/)
    end
  end
end
