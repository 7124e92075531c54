# frozen_string_literal: true

# HTTP/2 on `up` (Opal on Node, the engine as a Node-API addon): the same http2/ module as
# up_ruby's (test_http2.rb), on libuv, with nghttp2 from the node binary. h2c by prior
# knowledge and h2 by ALPN beside HTTP/1.1, the env of a stream (SERVER_PROTOCOL, HTTP_HOST
# from :authority, no hijack), a request body, streamed bodies, early hints, connection fields
# dropped, an event stream sent back to HTTP/1.1, and --no-http2. The app is up_node's
# (test/rackup/http2.ru), so both runtimes answer the same requests.
require "json"
require "open3"
require "tmpdir"
require_relative "helper"
require_relative "support/curl_client"
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

  def test_curl_retries_an_event_stream_over_http_1_1
    cert = CA.issue("localhost")
    server = start_up("-s", "-c", cert.cert_file, "-k", cert.key_file, APP, wait: false)
    @port = server.wait_for(HTTPS_LINE)[1].to_i
    out, err, status = Open3.capture3("curl", "-v", "-sS", "-N", "--http2", "--max-time", "10", "--cacert", CA.ca_file,
                                      "--resolve", "localhost:#{@port}:127.0.0.1", "-H", "accept: text/event-stream",
                                      "-w", "%{http_version}", "https://localhost:#{@port}/events")
    assert status.success?, err
    assert_match(/^> GET \/events HTTP\/2\r?$/, err, "asked over h2 first")
    assert_match(/HTTP_1_1_REQUIRED/, err, "curl says why it retried")
    assert_match(/^> GET \/events HTTP\/1\.1\r?$/, err)
    assert_equal "id: 0\ndata: tick 0\n\nid: 1\ndata: tick 1\n\nid: 2\ndata: tick 2\n\n1.1", out
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
