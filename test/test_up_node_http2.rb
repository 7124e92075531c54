# frozen_string_literal: true

# HTTP/2 on up_node (RFC 9113), with real clients: curl, nghttp (Debian's nghttp2-client),
# Node's http2 client (support/h2_node_client.js) and frames written by hand
# (support/h2_frames.rb) for what no well-behaved client sends. h2 by ALPN over TLS with
# http/1.1 kept (RFC 9113 §3.2), h2c by prior knowledge beside HTTP/1.1 on a plain port
# (§3.3) and no Upgrade to h2c (§3.1); streams are Rack requests with HTTP/1.1's env but
# SERVER_PROTOCOL, without pseudo-header fields (§8.3) and answered without connection-
# specific fields (§8.2.2); early hints, streamed bodies, event streams and WebSockets
# (RFC 8441) on streams; GOAWAY on a graceful stop (§6.8); the limits (§10.5) and
# --no-http2.
require "json"
require "open3"
require "socket"
require "tmpdir"
require_relative "helper"
require_relative "support/curl_client"
require_relative "support/test_certificates"
require_relative "support/up_node_process"
require_relative "support/h2_frames"

class TestUpNodeHTTP2 < Minitest::Test
  include CurlClient
  include UpTestHelpers
  include UpNodeProcess

  CA = TestCertificates.ca
  APP = File.join(CLIProcess::ROOT, "test/rackup/http2.ru")
  NODE_CLIENT = File.join(CLIProcess::ROOT, "test/support/h2_node_client.js")
  HTTPS_LINE = %r{listening on (?:\S+, )*https://127\.0\.0\.1:(\d+)}

  def start_https(*args)
    cert = CA.issue("localhost")
    server = start_up_node("-s", "-c", cert.cert_file, "-k", cert.key_file, *args, wait: false)
    @port = server.wait_for(HTTPS_LINE)[1].to_i
    server
  end

  def https_url(path)
    "https://localhost:#{@port}#{path}"
  end

  def http_url(path)
    "http://127.0.0.1:#{@port}#{path}"
  end

  # Node's http2 client: the requests sent at once on one session; its JSON answer.
  def node_client(url, requests, ca: "-")
    out, err, status = Open3.capture3("node", NODE_CLIENT, url, ca, JSON.generate(requests))
    assert status.success?, "#{out}#{err}"
    JSON.parse(out)
  end

  def s_client(*args)
    Open3.capture2e("openssl", "s_client", "-connect", "127.0.0.1:#{@port}", *args, stdin_data: "").first
  end

  def frames
    H2Frames.new(connect).tap { |h2| h2.read_until { |frame| frame.type == H2Frames::TYPES[:settings] } }
  end

  # ---- protocols

  def test_h2_by_alpn_over_tls_with_the_env_of_http_1_1
    start_https(APP)
    assert_includes s_client("-alpn", "http/1.1,h2"), "ALPN protocol: h2"
    h2, h2_version = curl("--http2", "--cacert", CA.ca_file, https_url("/env?a=1"))
    h1, h1_version = curl("--http1.1", "--cacert", CA.ca_file, https_url("/env?a=1"))
    assert_equal %w[2 1.1], [h2_version, h1_version]
    h2_env = JSON.parse(h2)
    assert_equal JSON.parse(h1).merge("SERVER_PROTOCOL" => "HTTP/2"), h2_env, "HTTP/1.1's env but for the protocol"
    assert_equal ["GET", "/env", "a=1", "localhost:#{@port}", false], h2_env.values_at("REQUEST_METHOD", "PATH_INFO", "QUERY_STRING", "HTTP_HOST", "rack.hijack?")
    assert_empty h2_env.keys.grep(/:/), "no pseudo-header field in the env"
  end

  def test_h2c_by_prior_knowledge_beside_http_1_1_on_one_port
    start_up_node(APP)
    body, version = curl("--http2-prior-knowledge", http_url("/env?x=1"))
    env = JSON.parse(body)
    assert_equal ["2", "HTTP/2", "/env", "x=1", "127.0.0.1:#{@port}", "127.0.0.1"],
                 [version, *env.values_at("SERVER_PROTOCOL", "PATH_INFO", "QUERY_STRING", "HTTP_HOST", "SERVER_NAME")]
    # An HTTP/1.1 request on the same port, its first byte alone in a packet: one byte says
    # nothing of the protocol yet, the next ones do.
    sock = connect
    sock.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1)
    sock.write("P")
    sock.write("OST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n\r\nhello")
    response = read_response(sock)
    assert_equal [200, "5|hel|5"], [response.status, response.body]
    # curl --http2 on a plain port offers Upgrade: h2c; the answer stays HTTP/1.1 (RFC 9113 §3.1).
    body, version = curl("--http2", http_url("/upgrade"))
    assert_equal ["/upgrade", "1.1"], [body, version]
  end

  # nghttp sends its requests on one connection, each a stream of its own.
  def test_nghttp_streams_a_body_and_streamed_responses_on_one_connection
    start_up_node(APP)
    Dir.mktmpdir do |dir|
      upload = File.join(dir, "upload")
      File.binwrite(upload, "u" * 100_000)
      out, err, status = Open3.capture3("nghttp", "-v", "-d", upload, http_url("/echo"), http_url("/stream"), http_url("/fields"))
      assert status.success?, err
      assert_equal 3, out.scan(/recv \(stream_id=(\d+)\) :status: 200/).uniq.size
      assert_equal 1, out.scan(/send SETTINGS frame <length=\d+, flags=0x00/).size, "one connection"
      assert_includes out, "100000|uuu|100000"
      # nghttp prints each DATA frame as it comes, between its own lines.
      assert_equal ["part 0", "part 1", "part 2"], out.scan(/part \d/)
      assert_match(/recv \(stream_id=\d+\) x-kept: yes/, out)
      refute_match(/recv \(stream_id=\d+\) (connection|keep-alive|transfer-encoding|upgrade):/, out)
    end
  end

  # Node's client, ten streams at once on one session: each slow stream has begun before any
  # has ended; an early hint, a body, fields HTTP/2 forbids left out.
  def test_node_client_concurrent_streams_early_hints_and_connection_fields
    start_https(APP)
    requests = Array.new(7) { |i| { path: "/slow?#{i}" } } +
               [{ path: "/hints" }, { path: "/echo", method: "POST", body: "a" * 70_000 }, { path: "/fields" }]
    result = node_client(https_url(""), requests, ca: CA.ca_file)
    responses = result.fetch("responses")
    assert_equal [200] * 10, responses.map { |r| r["status"] }
    assert_equal ["first\nlast\n"] * 7, responses.first(7).map { |r| r["body"] }
    assert_operator responses.first(7).map { |r| r["begunAtEnd"] }.min, :>=, 7, "every slow stream had begun before one ended"
    hints, echo, fields = responses.last(3)
    assert_equal [{ ":status" => 103, "link" => "</a.css>; rel=preload, </b.js>; rel=preload" }],
                 hints["informational"].map { |h| h.slice(":status", "link") }
    assert_equal "after hints", hints["body"]
    assert_equal "70000|aaa|70000", echo["body"]
    assert_equal "fields", fields["body"]
    assert_equal "yes", fields["headers"]["x-kept"]
    assert_empty fields["headers"].keys & %w[connection keep-alive transfer-encoding upgrade]
  end

  def test_an_event_stream_on_a_stream
    start_up_node(APP)
    body, version = curl("--http2-prior-knowledge", "-N", "-H", "Accept: text/event-stream", http_url("/events"))
    assert_equal ["id: 0\ndata: tick 0\n\nid: 1\ndata: tick 1\n\nid: 2\ndata: tick 2\n\n", "2"], [body, version]
  end

  def test_no_http2_speaks_http_1_1_only
    start_https("--no-http2", APP)
    assert_includes s_client("-alpn", "h2,http/1.1"), "ALPN protocol: http/1.1"
    assert_includes s_client("-alpn", "h2"), "no application protocol"
    assert_equal ["/tls", "1.1"], curl("--http2", "--cacert", CA.ca_file, https_url("/tls"))
    stop_up_nodes
    Dir.mktmpdir do |dir|
      config = File.join(dir, "up.rb")
      File.write(config, "http2 false\n")
      start_up_node("-C", config, APP)
      _, err, status = Open3.capture3("curl", "-sS", "--max-time", "10", "--http2-prior-knowledge", http_url("/"))
      refute status.success?, "prior knowledge refused"
      refute_empty err
      assert_equal ["/plain", "1.1"], curl(http_url("/plain"))
    end
  end

  # A stop: the open session gets GOAWAY (NO_ERROR), its stream in flight finishes, and the
  # server exits 0.
  def test_graceful_stop_sends_goaway_and_finishes_streams
    server = start_up_node(APP)
    Open3.popen3("node", NODE_CLIENT, http_url(""), "-", JSON.generate([{ path: "/slow" }]), "stop-after-first-byte") do |_in, out, err, wait|
      assert_equal({ "ready" => true }, JSON.parse(out.gets))
      server.signal(:TERM)
      result = JSON.parse(out.gets.to_s)
      assert wait.value.success?, err.read
      assert_equal "first\nlast\n", result.dig("responses", 0, "body")
      assert_equal 0, result.dig("goaway", "code")
    end
    assert_equal 0, server.wait(timeout: 10).exitstatus
  end

  # RFC 8441: SETTINGS_ENABLE_CONNECT_PROTOCOL, then a WebSocket on an extended CONNECT's
  # stream, through the same rack.upgrade API: messages echoed, a clean close.
  def test_a_websocket_on_a_stream
    start_up_node(File.join(CLIProcess::ROOT, "test/rackup/ws_echo.ru"))
    out, err, status = Open3.capture3("node", File.join(CLIProcess::ROOT, "test/support/h2_ws_client.js"),
                                      http_url("/ws"), "-", "hello", "over h2")
    assert status.success?, err
    assert_equal [{ "enableConnectProtocol" => true }, { "status" => 200, "protocol" => nil },
                  { "message" => "hello" }, { "message" => "over h2" }, { "close" => 1000 }],
                 out.lines.map { |line| JSON.parse(line) }
  end

  # ---- limits

  # A connection may have 100 streams open at once, as on the engine; a client that opens
  # more than it acknowledged breaks the protocol and its connection ends with GOAWAY, while
  # other connections go on.
  def test_more_concurrent_streams_than_allowed_end_the_connection
    start_up_node(APP)
    h2 = frames
    (1..201).step(2).each { |id| h2.get(id, "/slow") } # 101 streams, each open for a second
    goaway = h2.read_until { |frame| frame.type == H2Frames::TYPES[:goaway] }
    refute_nil goaway, "GOAWAY"
    refute_equal 0, goaway.error_code
    assert_equal ["/other", "2"], curl("--http2-prior-knowledge", http_url("/other"))
  end

  # The stream limit is the engine's, whatever --max-pipeline (HTTP/1.1's) says.
  def test_settings_advertise_the_limits
    start_up_node("--max-pipeline", "7", "--max-head-size", "4096", APP)
    h2 = H2Frames.new(connect)
    settings = h2.read_until { |frame| frame.type == H2Frames::TYPES[:settings] }.settings
    assert_equal [100, 4096], settings.values_at(H2Frames::SETTINGS[:max_concurrent_streams], H2Frames::SETTINGS[:max_header_list_size])
  end

  # As HTTP/1.1's head: more fields than --max-headers, or a list larger than --max-head-size
  # (decoded, RFC 9113 §6.5.2), is a 431 on its stream and the connection goes on. Node
  # resets a stream itself (ENHANCE_YOUR_CALM) when it has far more fields, or a list whose
  # encoding is past the size (HPACK literals without Huffman coding, as sent here).
  def test_oversized_header_lists_are_refused_on_their_stream
    start_up_node("--max-headers", "5", "--max-head-size", "1024", APP)
    h2 = frames
    h2.get(1, "/few", { "x-a" => "1" })
    h2.get(3, "/many", (1..6).to_h { |i| ["x-#{i}", "1"] })
    h2.get(5, "/big", { "x-big" => "b" * 1000 })
    h2.get(7, "/flood", (1..40).to_h { |i| ["x-#{i}", "1"] })
    h2.get(9, "/after")
    bodies = Hash.new { |hash, key| hash[key] = +"" }
    ended = []
    resets = {}
    h2.read_until do |frame|
      case H2Frames::TYPES.key(frame.type)
      when :data
        bodies[frame.stream] << frame.payload
        ended << frame.stream if frame.flags.anybits?(H2Frames::END_STREAM)
      when :rst_stream
        resets[frame.stream] = frame.error_code
      end
      (ended | resets.keys).size == 5
    end
    assert_equal({ 1 => "/few", 3 => "Request Header Fields Too Large\n", 9 => "/after" }, bodies)
    assert_equal({ 5 => 0xb, 7 => 0xb }, resets.slice(5, 7), "ENHANCE_YOUR_CALM")
    # curl's Huffman-coded 1000 bytes get past Node's check, and then ours.
    assert_equal "431", curl_status("--http2-prior-knowledge", "-H", "x-big: #{"b" * 1000}", http_url("/big"))
    assert_equal "200", curl_status("--http2-prior-knowledge", "-H", "x-big: #{"b" * 500}", http_url("/big"))
  end

  # CVE-2023-44487: streams opened and reset at once, thousands of them. nghttp2 (1.61 in
  # Node 20) lets a burst of about a thousand through, then ends the connection with GOAWAY;
  # other connections go on.
  def test_rapid_reset_flood_gets_goaway
    start_up_node(APP)
    h2 = frames
    (1..20_000).step(2) do |id|
      h2.get(id, "/reset", {}, open: true)
      h2.write_frame(:rst_stream, 0, id, [8].pack("N")) # CANCEL
    rescue Errno::EPIPE, Errno::ECONNRESET
      break
    end
    goaway = h2.read_until { |frame| frame.type == H2Frames::TYPES[:goaway] }
    refute_nil goaway
    assert_operator goaway.payload.unpack1("N"), :<, 20_000, "not every stream was taken"
    assert_equal ["/alive", "2"], curl("--http2-prior-knowledge", http_url("/alive"))
  end

  # --keepalive-timeout: a connection with no stream and no frame that long gets GOAWAY
  # (NO_ERROR) and is closed.
  def test_an_idle_connection_gets_goaway
    start_up_node("--keepalive-timeout", "1", APP)
    h2 = frames
    h2.get(1, "/before")
    goaway = h2.read_until(timeout: 10) { |frame| frame.type == H2Frames::TYPES[:goaway] }
    assert_equal [0, 1], [goaway.error_code, goaway.payload.unpack1("N")]
    assert_nil h2.read_until(timeout: 10) { |frame| frame.type != H2Frames::TYPES[:goaway] }, "closed"
  end

  # --body-timeout: a body that stops coming gets a 408 on its stream.
  def test_a_stalled_body_gets_408_on_its_stream
    start_up_node("--body-timeout", "1", APP)
    h2 = frames
    h2.write_frame(:headers, H2Frames::END_HEADERS, 1, h2.header_block("/echo", method: "POST"))
    h2.write_frame(:data, 0, 1, "part of a body")
    data = h2.read_until(timeout: 10) { |frame| frame.type == H2Frames::TYPES[:data] && frame.stream == 1 }
    assert_equal "Request Timeout\n", data.payload
  end

  # Node's and nghttp2's guards: a SETTINGS frame with more entries than Node takes, PINGs or
  # SETTINGS sent faster than their acknowledgements are read, a header block continued
  # without end (the CONTINUATION flood of 2024). Each flooder gets GOAWAY and is closed.
  def test_floods_get_goaway_and_other_connections_go_on
    start_up_node(APP)
    floods = {
      "settings entries" => ->(h2) { h2.write_frame(:settings, 0, 0, [4, 65_535].pack("nN") * 100) },
      "pings" => ->(h2) { 100_000.times { h2.write_frame(:ping, 0, 0, "12345678") } },
      "settings" => ->(h2) { 100_000.times { h2.write_frame(:settings, 0, 0, [4, 65_535].pack("nN")) } },
      "continuations" => lambda do |h2|
        h2.write_frame(:headers, 0, 1, h2.header_block("/continued"))
        100_000.times { h2.write_frame(:continuation, 0, 1, "\x00\x05x-abc\x01y".b) }
      end
    }
    floods.each do |name, flood|
      h2 = frames
      begin
        flood.call(h2)
      rescue Errno::EPIPE, Errno::ECONNRESET
        nil # closed while it flooded
      end
      goaway = h2.read_until { |frame| frame.type == H2Frames::TYPES[:goaway] }
      refute_nil goaway, "GOAWAY for a flood of #{name}"
      refute_equal 0, goaway.error_code, name
      assert_equal ["/alive", "2"], curl("--http2-prior-knowledge", http_url("/alive")), "after a flood of #{name}"
    end
  end

  private

  def curl_status(*args)
    out, err, status = Open3.capture3("curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", *args)
    assert status.success?, err
    out
  end
end
