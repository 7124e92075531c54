# frozen_string_literal: true

# HTTP/2 on `up` (Opal on Node, the engine as a Node-API addon): the same http2/ module as
# up_ruby's (test_http2.rb), on libuv, with nghttp2 from the node binary. h2c by prior
# knowledge and h2 by ALPN beside HTTP/1.1, the env of a stream (SERVER_PROTOCOL, HTTP_HOST
# from :authority, no hijack), a request body, streamed bodies, early hints, connection fields
# dropped, an event stream on its stream, and --no-http2. The app is up_node's
# (test/rackup/http2.ru), so both runtimes answer the same requests.
require "json"
require "open3"
require "tmpdir"
require_relative "helper"
require_relative "support/curl_client"
require_relative "support/h2_websockets"
require_relative "support/test_certificates"
require_relative "support/up_process"

class TestUpHTTP2 < Minitest::Test
  include CurlClient
  include UpTestHelpers
  include UpProcess

  CA = TestCertificates.ca
  APP = File.join(CLIProcess::ROOT, "test/rackup/http2.ru")
  HTTPS_LINE = %r{listening on (?:\S+, )*https://127\.0\.0\.1:(\d+)}

  def url(path)
    "http://127.0.0.1:#{@port}#{path}"
  end

  def test_h2c_streams_with_the_env_of_http_1_1
    start_up(APP)
    body, version = curl("--http2-prior-knowledge", "-H", "cookie: a=1", "-H", "cookie: b=2", url("/env?q=1"))
    assert_equal "2", version
    env = JSON.parse(body)
    assert_equal "HTTP/2", env["SERVER_PROTOCOL"]
    assert_equal "127.0.0.1:#{@port}", env["HTTP_HOST"]
    assert_equal ["/env", "q=1"], env.values_at("PATH_INFO", "QUERY_STRING")
    assert_equal "a=1; b=2", env["HTTP_COOKIE"]
    assert_equal false, env["rack.hijack?"]
    body, version = curl(url("/env"))
    assert_equal ["HTTP/1.1", "1.1"], [JSON.parse(body)["SERVER_PROTOCOL"], version]

    Dir.mktmpdir do |dir|
      path = File.join(dir, "body")
      File.binwrite(path, "abc" + ("x" * 99_997))
      assert_equal ["100000|abc|100000", "2"], curl("--http2-prior-knowledge", "--data-binary", "@#{path}", url("/echo"))
    end
    assert_equal ["part 0\npart 1\npart 2\n", "2"], curl("--http2-prior-knowledge", url("/stream"))
    out, status = Open3.capture2e("nghttp", "-nv", "-t", "10", url("/hints"), url("/fields"))
    assert status.success?, out
    assert_match(/:status: 103\n.*link: <\/a\.css>; rel=preload/m, out)
    assert_includes out, "x-kept: yes"
    %w[connection keep-alive transfer-encoding upgrade].each do |name|
      refute_match(/recv \(stream_id=\d+\) #{name}:/, out)
    end
  end

  def test_h2_by_alpn_over_tls
    cert = CA.issue("localhost")
    server = start_up("-s", "-c", cert.cert_file, "-k", cert.key_file, APP, wait: false)
    @port = server.wait_for(HTTPS_LINE)[1].to_i
    common = ["--cacert", CA.ca_file, "--resolve", "localhost:#{@port}:127.0.0.1"]
    body, version = curl("--http2", *common, "https://localhost:#{@port}/env")
    assert_equal ["HTTP/2", "2"], [JSON.parse(body)["SERVER_PROTOCOL"], version]
    assert_equal "1.1", curl("--http1.1", *common, "https://localhost:#{@port}/env")[1]
  end

  def test_curl_gets_an_event_stream_on_its_h2_stream
    cert = CA.issue("localhost")
    server = start_up("-s", "-c", cert.cert_file, "-k", cert.key_file, APP, wait: false)
    @port = server.wait_for(HTTPS_LINE)[1].to_i
    out, err, status = Open3.capture3("curl", "-v", "-sS", "-N", "--http2", "--max-time", "10", "--cacert", CA.ca_file,
                                      "--resolve", "localhost:#{@port}:127.0.0.1", "-H", "accept: text/event-stream",
                                      "-w", "%{http_version}", "https://localhost:#{@port}/events")
    assert status.success?, err
    refute_match(/HTTP_1_1_REQUIRED/, err)
    assert_match(%r{^< content-type: text/event-stream\r?$}, err)
    assert_equal "id: 0\ndata: tick 0\n\nid: 1\ndata: tick 1\n\nid: 2\ndata: tick 2\n\n2", out
  end

  # RFC 8441 on `up`: the engine's tunnel on libuv (test_http2_websocket.rb has the rest).
  def test_a_websocket_on_an_h2c_stream_beside_a_request
    start_up(APP)
    ws = H2WebSockets.new(connect)
    assert ws.enable_connect_protocol?
    assert_equal "200", ws.open(1, "/ws").status
    assert_equal "hello HTTP/2", ws.read_frame(1).payload
    ws.text(1, "echo me")
    assert_equal "echo me", ws.read_frame(1).payload
    ws.h2.headers(3, ws.h2.request_fields("/plain"))
    assert_equal "/plain", ws.h2.response(3).body
    ws.close(1, 1000)
    assert_equal 1000, ws.read_frame(1).close_code
    assert_equal [:end], ws.stream_end(1)
  end

  def test_no_http2_speaks_http_1_1_only
    start_up("--no-http2", APP)
    _out, _err, status = Open3.capture3("curl", "-sS", "--max-time", "5", "--http2-prior-knowledge", url("/"))
    refute status.success?, "no h2c with --no-http2"
    assert_equal ["/plain", "1.1"], curl(url("/plain"))
  end

  # Uploads larger than the receive windows, several at once on one connection (nghttp -d):
  # each reaches the app whole, past the memory a connection keeps for bodies (spooled).
  def test_parallel_uploads_on_one_connection
    start_up(APP)
    Dir.mktmpdir do |dir|
      path = File.join(dir, "body")
      File.binwrite(path, "abc" + ("x" * ((2 * 1024 * 1024) - 3)))
      out, status = Open3.capture2e("nghttp", "-t", "20", "-d", path, url("/echo"), url("/echo?2"), url("/echo?3"))
      assert status.success?, out
      assert_includes out, "2097152|abc|2097152" * 3 # the bodies, written one after another
    end
  end
end
