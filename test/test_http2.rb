# frozen_string_literal: true

# HTTP/2 on up_ruby (RFC 9113), the engine's http2/ on libnghttp2, with real clients: curl,
# nghttp (Debian's nghttp2-client) and frames written by hand (support/h2_frames.rb) for what
# no well-behaved client sends. h2 by ALPN over TLS with http/1.1 kept (§3.2), h2c by prior
# knowledge beside HTTP/1.1 on a plain port (§3.3); streams are Rack requests with HTTP/1.1's
# env but SERVER_PROTOCOL, run on the app threads at once, answered without connection-
# specific fields (§8.2.2); request bodies, streamed and file bodies, early hints as a 103
# (RFC 8297); an event stream on its own stream (rack.upgrade? :sse, as on HTTP/1.1);
# GOAWAY on a graceful stop (§6.8); the access log; the limits (§10.5) and http2: false
# (--no-http2).
require "fileutils"
require "json"
require "open3"
require "socket"
require "tmpdir"
require_relative "helper"
require_relative "support/curl_client"
require_relative "support/test_certificates"
require_relative "support/h2_frames"
require_relative "support/hpack_decoder"
require "up/options"
require "up/static_files"

class TestHTTP2 < Minitest::Test
  include CurlClient
  include UpTestHelpers

  CA = TestCertificates.ca
  FILE_BODY = ("file body line\n" * 10_000).freeze

  # A body that answers to_path, as Rack::Files' does.
  class PathBody
    def initialize(path)
      @path = path
    end

    def to_path = @path

    def each
      yield File.binread(@path)
    end
  end

  # An event stream of two events that then ends.
  class Feed
    def on_open(client)
      client.write("hello", event: "greeting", id: 1)
      client.write("bye")
      client.close
    end
  end

  def app
    file = file_path
    gate = @gate = Queue.new
    started = @started = Queue.new
    lambda do |env|
      case env["PATH_INFO"]
      when "/env"
        plain = env.select { |_key, value| value.is_a?(String) || value == true || value == false }
        plain["rack.upgrade?"] = env["rack.upgrade?"].inspect
        plain["has rack.hijack"] = env.key?("rack.hijack")
        [200, { "content-type" => "application/json" }, [JSON.generate(plain)]]
      when "/feed"
        next [200, { "content-type" => "text/plain" }, ["no event stream on #{env["SERVER_PROTOCOL"]}"]] unless env["rack.upgrade?"] == :sse

        env["rack.upgrade"] = Feed.new
        [200, {}, []]
      when "/echo"
        all = env["rack.input"].read
        [200, { "content-type" => "text/plain" }, ["#{all.bytesize}|#{all[0, 3]}|#{env["CONTENT_LENGTH"]}"]]
      when "/each"
        [200, { "content-type" => "text/plain" }, Enumerator.new { |y| 3.times { |i| y << "part #{i}\n" } }]
      when "/call"
        [200, { "content-type" => "text/plain" }, lambda { |stream|
          3.times { |i| stream.write("call #{i}\n") }
          stream.close
        }]
      when "/file"
        [200, { "content-type" => "text/plain" }, PathBody.new(file)]
      when "/hints"
        env["rack.early_hints"].call({ "link" => "</a.css>; rel=preload" })
        [200, { "content-type" => "text/plain" }, ["after hints"]]
      when "/fields"
        [200, { "connection" => "close", "keep-alive" => "timeout=5", "transfer-encoding" => "chunked",
                "upgrade" => "h2c", "x-kept" => "yes" }, ["fields"]]
      when "/wait"
        [200, {}, ["waited for #{gate.pop}"]]
      when "/release"
        gate << "release"
        [200, {}, ["released"]]
      when "/big"
        parts = @parts = Queue.new
        body = Enumerator.new do |y|
          160.times do |i|
            parts << i
            y << ("b" * 65_536)
          end
        end
        [200, { "content-type" => "text/plain" }, body]
      when "/parts"
        [200, {}, [@parts.size.to_s]]
      when "/slow"
        started << true
        sleep 1
        [200, {}, ["slow done"]]
      else
        [200, { "content-type" => "text/plain" }, [env["PATH_INFO"]]]
      end
    end
  end

  def file_path
    @file_path ||= File.join(@dir ||= Dir.mktmpdir("up-h2"), "file.txt").tap { |p| File.write(p, FILE_BODY) }
  end

  def teardown
    super
    FileUtils.rm_rf(@dir) if @dir
  end

  def tls_context(cert)
    Up::TLSContext.new(cert_file: cert.cert_file, key_file: cert.key_file, hosts: [], ticket_secret: Random.bytes(32))
  end

  def url(path)
    "http://127.0.0.1:#{@port}#{path}"
  end

  def curl_status(*args)
    out, err, status = Open3.capture3("curl", "-sS", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code}", *args)
    assert status.success?, err
    out
  end

  def nghttp(*args)
    out, status = Open3.capture2e("nghttp", "-nv", "-t", "10", *args)
    assert status.success?, out
    out
  end

  # RFC 7541 §5.2: a string literal without Huffman coding (a length below 127 + 128 * 128).
  def hpack_string(text)
    length = text.bytesize
    prefix = length < 127 ? [length].pack("C") : [127, ((length - 127) % 128) + 128, (length - 127) / 128].pack("C*")
    prefix + text.b
  end

  def frames
    H2Frames.new(connect).tap { |h2| h2.read_until { |frame| frame.type == H2Frames::TYPES[:settings] } }
  end

  # ---- protocols

  def test_h2c_by_prior_knowledge_beside_http_1_1_on_one_port
    start_server(app)
    body, version = curl("--http2-prior-knowledge", "-H", "x-custom: one", "-H", "cookie: a=1",
                         "-H", "cookie: b=2", url("/env?q=1"))
    assert_equal "2", version
    env = JSON.parse(body)
    assert_equal "HTTP/2", env["SERVER_PROTOCOL"]
    assert_equal "127.0.0.1:#{@port}", env["HTTP_HOST"]
    assert_equal "127.0.0.1", env["SERVER_NAME"]
    assert_equal @port.to_s, env["SERVER_PORT"]
    assert_equal "GET", env["REQUEST_METHOD"]
    assert_equal "/env", env["PATH_INFO"]
    assert_equal "q=1", env["QUERY_STRING"]
    assert_equal "one", env["HTTP_X_CUSTOM"]
    assert_equal "a=1; b=2", env["HTTP_COOKIE"]
    assert_equal false, env["rack.hijack?"]
    assert_equal false, env["has rack.hijack"], "no rack.hijack on a stream, though the bind has it for HTTP/1.1"
    assert_equal "nil", env["rack.upgrade?"], "no WebSocket or event stream on a stream yet"
    refute env.keys.any? { |key| key.start_with?("HTTP_:") }, "no pseudo-header field in the env"

    body, version = curl(url("/env"))
    assert_equal "1.1", version
    assert_equal "HTTP/1.1", JSON.parse(body)["SERVER_PROTOCOL"]
    assert_equal true, JSON.parse(body)["has rack.hijack"]
  end

  def test_h2_by_alpn_over_tls_with_http_1_1_kept
    cert = CA.issue("localhost")
    start_server(app, tls: tls_context(cert))
    common = ["--cacert", CA.ca_file, "--resolve", "localhost:#{@port}:127.0.0.1"]
    body, version = curl("--http2", *common, "https://localhost:#{@port}/env")
    assert_equal "2", version
    env = JSON.parse(body)
    assert_equal ["HTTP/2", "https"], env.values_at("SERVER_PROTOCOL", "rack.url_scheme")
    assert_equal ["/env", "1.1"], curl("--http1.1", *common, "https://localhost:#{@port}/env").then { |b, v| [JSON.parse(b)["PATH_INFO"], v] }
    alpn = Open3.capture2e("openssl", "s_client", "-connect", "127.0.0.1:#{@port}", "-alpn", "http/1.1,h2",
                           stdin_data: "").first
    assert_includes alpn, "ALPN protocol: h2"
  end

  def test_no_http2_speaks_http_1_1_only
    start_server(app, http2: false)
    _out, _err, status = Open3.capture3("curl", "-sS", "--max-time", "5", "--http2-prior-knowledge", url("/"))
    refute status.success?, "no h2c with http2: false"
    assert_equal ["/plain", "1.1"], curl(url("/plain"))
    cert = CA.issue("localhost")
    start_server(app, http2: false, tls: tls_context(cert))
    assert_equal ["/tls", "1.1"], curl("--http2", "--cacert", CA.ca_file, "--resolve", "localhost:#{@port}:127.0.0.1",
                                       "https://localhost:#{@port}/tls")
  end

  # ---- streams as Rack requests

  def test_request_bodies_reach_rack_input
    start_server(app)
    Dir.mktmpdir do |dir|
      path = File.join(dir, "body")
      File.binwrite(path, "abc" + ("x" * 199_997))
      assert_equal ["200000|abc|200000", "2"], curl("--http2-prior-knowledge", "--data-binary", "@#{path}", url("/echo"))
    end
    assert_equal ["0||", "2"], curl("--http2-prior-knowledge", url("/echo"))
  end

  def test_streamed_and_file_bodies_on_one_connection
    start_server(app, threads: 2)
    out = nghttp(url("/each"), url("/file"), url("/string"))
    assert_match(/recv \(stream_id=\d+\) :status: 200/, out)
    assert_equal 3, out.scan(/recv (?:DATA|HEADERS) frame [^\n]*\n\s*; END_STREAM/).size, out[-2000..]
    assert_equal ["part 0\npart 1\npart 2\n", "2"], curl("--http2-prior-knowledge", url("/each"))
    assert_equal ["call 0\ncall 1\ncall 2\n", "2"], curl("--http2-prior-knowledge", url("/call"))
    body, version = curl("--http2-prior-knowledge", url("/file"))
    assert_equal "2", version
    assert_equal FILE_BODY, body
  end

  # The static handler answers a stream before the app, as it answers HTTP/1.1 requests, and
  # a HEAD gets the head alone.
  def test_static_files_and_head_on_streams
    root = File.join(@dir ||= Dir.mktmpdir("up-h2"), "public")
    FileUtils.mkdir_p(root)
    File.write(File.join(root, "static.txt"), "static " * 10_000)
    options = Up::Options.new({ public: root }).to_h
    start_server(app, static: Up::StaticFiles.new(options, dir: @dir).to_h)
    assert_equal ["static " * 10_000, "2"], curl("--http2-prior-knowledge", url("/static.txt"))
    assert_equal ["/dynamic", "2"], curl("--http2-prior-knowledge", url("/dynamic"))
    out = nghttp("-H", ":method: HEAD", url("/static.txt"))
    assert_match(/recv \(stream_id=\d+\) content-length: 70000/, out)
    refute_match(/recv DATA frame/, out)
  end

  def test_streams_run_on_the_app_threads_at_once
    start_server(app, threads: 2)
    h2 = frames
    h2.get(1, "/wait")
    h2.get(3, "/release")
    bodies = Hash.new { |hash, key| hash[key] = +"" }
    ended = []
    h2.read_until(timeout: 10) do |frame|
      if frame.type == H2Frames::TYPES[:data]
        bodies[frame.stream] << frame.payload
        ended << frame.stream if frame.flags.anybits?(H2Frames::END_STREAM)
      end
      ended.size == 2
    end
    assert_equal({ 1 => "waited for release", 3 => "released" }, bodies)
  end

  # A stream whose window the client leaves closed holds its own producer (back-pressure on
  # the app's each) and no other stream: the connection's window is open, the other streams'
  # bodies come, and the app made only what the stream's bound lets it queue.
  def test_a_stream_the_client_does_not_read_holds_no_other
    start_server(app, threads: 2)
    h2 = frames
    h2.write_frame(:window_update, 0, 0, [100 * 1024 * 1024].pack("N"))
    h2.get(1, "/big")
    first = h2.read_until { |frame| frame.type == H2Frames::TYPES[:data] && frame.stream == 1 }
    refute_nil first
    h2.get(3, "/other")
    data = h2.read_until { |frame| frame.type == H2Frames::TYPES[:data] && frame.stream == 3 }
    assert_equal "/other", data.payload
    h2.get(5, "/parts")
    made = h2.read_until { |frame| frame.type == H2Frames::TYPES[:data] && frame.stream == 5 }.payload.to_i
    assert_operator made, :<, 20, "parts made while the stream's window stayed closed (of 160)"
  end

  def test_early_hints_and_connection_fields
    start_server(app)
    out = nghttp(url("/hints"))
    assert_match(/:status: 103\n.*link: <\/a\.css>; rel=preload/m, out)
    assert_match(/:status: 200/, out)
    out = nghttp(url("/fields"))
    assert_includes out, "x-kept: yes"
    assert_match(/recv \(stream_id=\d+\) date: \w{3}, \d\d \w{3} \d{4} /, out)
    %w[connection keep-alive transfer-encoding upgrade].each do |name|
      refute_match(/recv \(stream_id=\d+\) #{name}:/, out)
    end
  end

  def test_each_stream_has_an_access_log_line
    Dir.mktmpdir do |dir|
      path = File.join(dir, "access.log")
      server = start_server(app, access_log: path)
      curl("--http2-prior-knowledge", url("/one"))
      curl("--http2-prior-knowledge", url("/two"))
      server.stop
      lines = File.readlines(path)
      assert_equal 2, lines.size, lines.join
      assert_match(%r{"GET /one HTTP/2" 200 4 }, lines[0])
      assert_match(%r{"GET /two HTTP/2" 200 4 }, lines[1])
    end
  end

  def test_graceful_stop_sends_goaway_and_finishes_streams
    server = start_server(app)
    h2 = frames
    h2.get(1, "/slow")
    @started.pop # the request is in the app before the stop
    stopper = Thread.new { server.stop }
    goaway = h2.read_until { |frame| frame.type == H2Frames::TYPES[:goaway] }
    assert_equal [0, 1], [goaway.error_code, goaway.payload.unpack1("N") & 0x7fffffff]
    data = h2.read_until { |frame| frame.type == H2Frames::TYPES[:data] }
    assert_equal "slow done", data.payload
    stopper.join
  end

  # ---- event streams (rack.upgrade) on their streams

  def test_an_event_stream_stays_on_its_stream_and_other_streams_go_on
    start_server(app, threads: 2)
    h2 = frames
    events = { "accept" => "text/html, text/event-stream;q=0.9" }
    h2.get(1, "/feed", events)
    h2.get(3, "/other")
    h2.write_frame(:headers, H2Frames::END_HEADERS | H2Frames::END_STREAM, 5,
                   h2.header_block("/feed", events, method: "POST"))
    resets = {}
    heads = {}
    decoder = HpackDecoder.new # every block, in order: the dynamic table
    bodies = Hash.new { |h, k| h[k] = +"" }
    ended = []
    h2.read_until do |frame|
      resets[frame.stream] = frame.error_code if frame.type == H2Frames::TYPES[:rst_stream]
      heads[frame.stream] = decoder.decode(frame.payload).to_h if frame.type == H2Frames::TYPES[:headers]
      bodies[frame.stream] << frame.payload if frame.type == H2Frames::TYPES[:data]
      ended << frame.stream if frame.type == H2Frames::TYPES[:data] && frame.flags.anybits?(H2Frames::END_STREAM)
      [1, 3, 5].all? { |id| ended.include?(id) }
    end
    assert_empty resets
    assert_equal %w[200 text/event-stream], heads[1].values_at(":status", "content-type")
    assert_equal "id: 1\nevent: greeting\ndata: hello\n\ndata: bye\n\n", bodies[1], "the events, then END_STREAM"
    assert_equal "/other", bodies[3]
    assert_equal "no event stream on HTTP/2", bodies[5], "only a GET is an event stream (EventSource's request)"
    h2.get(7, "/after")
    data = h2.read_until { |frame| frame.type == H2Frames::TYPES[:data] && frame.stream == 7 }
    assert_equal "/after", data&.payload, "the connection goes on"
  end

  def test_curl_gets_an_event_stream_over_h2_with_prior_knowledge_and_over_tls
    start_server(app)
    out, err, status = Open3.capture3("curl", "-sS", "-N", "--http2-prior-knowledge", "--max-time", "10",
                                      "-H", "accept: text/event-stream", "-w", "%{http_version}", url("/feed"))
    assert status.success?, err
    assert_equal "id: 1\nevent: greeting\ndata: hello\n\ndata: bye\n\n2", out
    cert = CA.issue("localhost")
    start_server(app, tls: tls_context(cert))
    out, err, status = Open3.capture3("curl", "-v", "-sS", "-N", "--http2", "--max-time", "10", "--cacert", CA.ca_file,
                                      "--resolve", "localhost:#{@port}:127.0.0.1", "-H", "accept: text/event-stream",
                                      "-w", "%{http_version}", "https://localhost:#{@port}/feed")
    assert status.success?, err
    refute_match(/HTTP_1_1_REQUIRED/, err)
    assert_match(%r{^< content-type: text/event-stream\r?$}, err)
    assert_equal "id: 1\nevent: greeting\ndata: hello\n\ndata: bye\n\n2", out
  end

  # ---- limits

  def test_settings_advertise_the_limits
    start_server(app, max_head_size: 4096)
    h2 = H2Frames.new(connect)
    settings = h2.read_until { |frame| frame.type == H2Frames::TYPES[:settings] }.settings
    assert_equal [100, 4096], settings.values_at(H2Frames::SETTINGS[:max_concurrent_streams],
                                                 H2Frames::SETTINGS[:max_header_list_size])
  end

  # A client that opens more streams than SETTINGS_MAX_CONCURRENT_STREAMS allows breaks the
  # limit it acknowledged: nghttp2 makes it a connection error (RFC 9113 §5.1.2 allows a
  # stream error; up_node does the same), GOAWAY PROTOCOL_ERROR naming the last stream taken.
  # The streams taken finish in the app, then the connection closes; others go on.
  def test_streams_past_the_concurrent_limit_end_the_connection
    start_server(app, threads: 2)
    h2 = frames
    (1..201).step(2).each { |id| h2.get(id, "/wait") } # 101 streams, each held in the app
    goaway = h2.read_until { |frame| frame.type == H2Frames::TYPES[:goaway] }
    assert_equal [0x1, 199], [goaway.error_code, goaway.payload.unpack1("N")]
    100.times { @gate << "release" }
    assert_nil h2.read_until(timeout: 10) { false }, "closed once its streams are done"
    assert_equal ["/alive", "2"], curl("--http2-prior-knowledge", url("/alive"))
  end

  # As HTTP/1.1's head: a list larger than max_head_size (decoded, RFC 9113 §6.5.2), or more
  # fields than max_headers, is a 431 on its stream, and the connection goes on.
  def test_oversized_header_lists_are_refused_on_their_stream
    start_server(app, max_head_size: 1024, max_headers: 5)
    h2 = frames
    h2.get(1, "/few", { "x-a" => "1" })
    h2.get(3, "/many", (1..6).to_h { |i| ["x-#{i}", "1"] })
    h2.get(5, "/big", { "x-big" => "b" * 1000 })
    h2.get(7, "/after")
    bodies = Hash.new { |hash, key| hash[key] = +"" }
    ended = []
    h2.read_until do |frame|
      if frame.type == H2Frames::TYPES[:data]
        bodies[frame.stream] << frame.payload
        ended << frame.stream if frame.flags.anybits?(H2Frames::END_STREAM)
      end
      ended.size == 4
    end
    too_large = "Request Header Fields Too Large\n"
    assert_equal({ 1 => "/few", 3 => too_large, 5 => too_large, 7 => "/after" }, bodies)
    assert_equal "431", curl_status("--http2-prior-knowledge", "-H", "x-big: #{"b" * 1000}", url("/big"))
    assert_equal "200", curl_status("--http2-prior-knowledge", "-H", "x-big: #{"b" * 500}", url("/big"))
  end

  # An HPACK bomb (RFC 7541 §7.3): one large field put in the dynamic table, then referenced by
  # its index, a byte each, many times. The decoded list is what counts: a 431 on its stream,
  # and the connection goes on.
  def test_an_hpack_bomb_is_refused_on_its_stream
    start_server(app, max_head_size: 4096)
    h2 = frames
    # A literal with incremental indexing (§6.2.1), then 100 references to it (§6.1: index 62).
    bomb = "\x40".b + hpack_string("x-bomb") + hpack_string("b" * 900) + ("\xbe".b * 100)
    h2.write_frame(:headers, H2Frames::END_HEADERS | H2Frames::END_STREAM, 1, h2.header_block("/bomb") + bomb)
    h2.get(3, "/after")
    bodies = Hash.new { |hash, key| hash[key] = +"" }
    ended = []
    h2.read_until do |frame|
      if frame.type == H2Frames::TYPES[:data]
        bodies[frame.stream] << frame.payload
        ended << frame.stream if frame.flags.anybits?(H2Frames::END_STREAM)
      end
      ended.size == 2
    end
    assert_equal({ 1 => "Request Header Fields Too Large\n", 3 => "/after" }, bodies)
  end

  # CVE-2023-44487: streams opened and reset at once. Past UP_HTTP2_MAX_RESETS in a second the
  # connection gets GOAWAY ENHANCE_YOUR_CALM and is closed; other connections go on.
  def test_rapid_reset_flood_gets_goaway_enhance_your_calm
    start_server(app)
    h2 = frames
    (1..4_000).step(2) do |id|
      h2.get(id, "/reset")
      h2.write_frame(:rst_stream, 0, id, [8].pack("N")) # CANCEL
    rescue Errno::EPIPE, Errno::ECONNRESET
      break
    end
    goaway = h2.read_until { |frame| frame.type == H2Frames::TYPES[:goaway] }
    refute_nil goaway
    assert_equal 0xb, goaway.error_code, "ENHANCE_YOUR_CALM"
    assert_nil h2.read_until { false }, "closed"
    assert_equal ["/alive", "2"], curl("--http2-prior-knowledge", url("/alive"))
  end

  # RFC 9113 §6.9.2: a SETTINGS_INITIAL_WINDOW_SIZE that makes an open stream's window pass
  # 2^31-1 is a connection error (nghttp2 alone would reset the stream).
  def test_a_settings_change_that_overflows_a_stream_window_ends_the_connection
    start_server(app)
    h2 = frames
    h2.write_frame(:headers, H2Frames::END_HEADERS, 1, h2.header_block("/echo", method: "POST"))
    h2.write_frame(:window_update, 0, 1, [(2**31) - 1 - 65_535].pack("N"))
    h2.write_frame(:settings, 0, 0, [4, 65_536].pack("nN"))
    goaway = h2.read_until { |frame| frame.type == H2Frames::TYPES[:goaway] || frame.type == H2Frames::TYPES[:rst_stream] }
    assert_equal [H2Frames::TYPES[:goaway], 0x3], [goaway.type, goaway.error_code], "GOAWAY FLOW_CONTROL_ERROR"
    assert_equal ["/alive", "2"], curl("--http2-prior-knowledge", url("/alive"))
  end

  # A connection with no stream and no frame for keepalive_timeout gets GOAWAY (NO_ERROR) and
  # is closed.
  def test_an_idle_connection_gets_goaway
    start_server(app, keepalive_timeout: 0.5)
    h2 = frames
    h2.get(1, "/before")
    goaway = h2.read_until(timeout: 10) { |frame| frame.type == H2Frames::TYPES[:goaway] }
    assert_equal [0, 1], [goaway.error_code, goaway.payload.unpack1("N")]
    assert_nil h2.read_until(timeout: 10) { false }, "closed"
  end

  # body_timeout: a body that stops coming gets a 408 on its stream; the connection goes on.
  def test_a_stalled_body_gets_408_on_its_stream
    start_server(app, body_timeout: 0.5)
    h2 = frames
    h2.write_frame(:headers, H2Frames::END_HEADERS, 1, h2.header_block("/echo", method: "POST"))
    h2.write_frame(:data, 0, 1, "part of a body")
    data = h2.read_until(timeout: 10) { |frame| frame.type == H2Frames::TYPES[:data] && frame.stream == 1 }
    assert_equal "Request Timeout\n", data.payload
    h2.get(3, "/after")
    data = h2.read_until(timeout: 10) { |frame| frame.type == H2Frames::TYPES[:data] && frame.stream == 3 }
    assert_equal "/after", data.payload
  end

  # nghttp2's guards with our bounds: a SETTINGS frame with more entries than
  # UP_HTTP2_MAX_SETTINGS and a header block continued without end (the CONTINUATION flood of
  # 2024, UP_HTTP2_MAX_CONTINUATIONS) get GOAWAY ENHANCE_YOUR_CALM; PINGs or SETTINGS sent
  # faster than their acknowledgements are read (UP_HTTP2_MAX_OUTBOUND_ACK) are closed at once
  # (no GOAWAY would get past the unread ACKs). Other connections go on.
  def test_floods_end_the_connection_and_others_go_on
    start_server(app)
    ping = [0, 8, 6, 0, 0].pack("nCCCN") + "12345678"
    settings = [0, 6, 4, 0, 0].pack("nCCCN") + [4, 65_535].pack("nN")
    floods = {
      "settings entries" => ->(h2, _socket) { h2.write_frame(:settings, 0, 0, [4, 65_535].pack("nN") * 100) },
      "continuations" => lambda do |h2, _socket|
        h2.write_frame(:headers, 0, 1, h2.header_block("/continued"))
        100.times { h2.write_frame(:continuation, 0, 1, "\x00\x05x-abc\x01y".b) }
      end,
      "pings" => ->(_h2, socket) { socket.write(ping * 400_000) },
      "settings" => ->(_h2, socket) { socket.write(settings * 400_000) }
    }
    floods.each do |name, flood|
      socket = connect
      socket.setsockopt(Socket::SOL_SOCKET, Socket::SO_RCVBUF, 4096)
      h2 = H2Frames.new(socket)
      begin
        flood.call(h2, socket)
      rescue Errno::EPIPE, Errno::ECONNRESET
        nil # closed while it flooded
      end
      last = nil
      closed = begin
        h2.read_until(timeout: 10) { |frame| (last = frame) && false }.nil?
      rescue Errno::EPIPE, Errno::ECONNRESET
        true
      end
      assert closed, "closed after a flood of #{name}"
      if %w[settings\ entries continuations].include?(name)
        assert_equal [H2Frames::TYPES[:goaway], 0xb], [last&.type, last&.error_code], "GOAWAY last for #{name}"
      end
      assert_equal ["/alive", "2"], curl("--http2-prior-knowledge", url("/alive")), "after a flood of #{name}"
    end
  end
end
