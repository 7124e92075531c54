# frozen_string_literal: true

# HTTPS on up_ruby with real clients: curl and Net::HTTP verifying against a CA of
# the tests' own (test/support/test_certificates.rb: no key is committed), openssl s_client for
# each protocol version (TLS 1.0 and 1.1 refused, RFC 8996, by a client shown able to speak
# them), ALPN (RFC 7301), SNI (RFC 6066 §3), resumption by session ticket across servers that
# share the ticket secret, plain HTTP on the TLS port, a thousand unfinished handshakes, a
# certificate replaced under load, WebSockets, an event stream and a to_path body over TLS.
# The engine's side of it is test/engine/transport_tls_test.c; the command line's is
# test_tls_cli.rb.
require "digest"
require "net/http"
require "open3"
require_relative "helper"
require_relative "support/test_certificates"
require_relative "support/ws_client"

class TestTLS < Minitest::Test
  include UpTestHelpers

  CA = TestCertificates.ca
  SECRET = Random.bytes(32)

  ENV_APP = lambda do |env|
    keys = %w[rack.url_scheme HTTPS SERVER_NAME SERVER_PORT REQUEST_METHOD PATH_INFO QUERY_STRING]
    body = keys.map { |k| "#{k}=#{env[k]}" }.join("\n")
    body << "\nbody=#{env["rack.input"].read.bytesize}"
    [200, { "content-type" => "text/plain" }, [body]]
  end

  def context(issued = localhost, hosts: [], secret: SECRET)
    Up::TLSContext.new(cert_file: issued.cert_file, key_file: issued.key_file, hosts: hosts, ticket_secret: secret)
  end

  def localhost
    @localhost ||= CA.issue("localhost")
  end

  def start_tls(app = ENV_APP, tls: context, **options)
    start_server(app, tls: tls, **options)
  end

  def curl(*args)
    out, err, status = Open3.capture3("curl", "-sS", "--max-time", "10", "--cacert", CA.ca_file,
                                      "--resolve", "localhost:#{@port}:127.0.0.1", *args)
    [out, err, status]
  end

  def s_client(*args, input: "")
    out, _status = Open3.capture2e("openssl", "s_client", "-connect", "127.0.0.1:#{@port}", "-CAfile", CA.ca_file,
                                   *args, stdin_data: input)
    out
  end

  # A Ruby client: connected, verified (host localhost unless said), returned open.
  def ssl_socket(port = @port, hostname: "localhost", **settings)
    ssl = OpenSSL::SSL::SSLSocket.new(TCPSocket.new("127.0.0.1", port), CA.client_context(**settings))
    ssl.sync_close = true
    ssl.hostname = hostname
    ssl.connect
    (@sockets ||= []) << ssl
    ssl
  end

  def test_curl_gets_https_with_the_env_rack_expects
    start_tls
    out, err, status = curl("https://localhost:#{@port}/p?q=1")
    assert status.success?, err
    assert_includes out, "rack.url_scheme=https"
    assert_includes out, "HTTPS=on"
    assert_includes out, "SERVER_NAME=localhost"
    assert_includes out, "SERVER_PORT=#{@port}"
    assert_includes out, "QUERY_STRING=q=1"
  end

  def test_server_port_defaults_to_443_without_a_port_in_host
    start_tls
    ssl = ssl_socket
    ssl.write("GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
    assert_includes ssl.read, "SERVER_PORT=443"
  end

  def test_net_http_verifies_the_server_and_keeps_the_connection
    start_tls
    http = Net::HTTP.new("localhost", @port)
    http.ipaddr = "127.0.0.1"
    http.use_ssl = true
    http.ca_file = CA.ca_file
    http.verify_mode = OpenSSL::SSL::VERIFY_PEER
    http.start do
      3.times { |i| assert_includes http.get("/get#{i}").body, "PATH_INFO=/get#{i}" }
      post = Net::HTTP::Post.new("/up")
      post.body = Random.bytes(3 * 1024 * 1024)
      assert_includes http.request(post).body, "body=#{3 * 1024 * 1024}"
      assert_equal 1, @servers.first.server.stats[:connections], "one connection for all four"
    end
  end

  # The client speaks TLS 1.0 and 1.1 to OpenSSL's own server, then UP! refuses them.
  def test_tls_1_2_and_1_3_only_with_openssl_s_client
    start_tls
    { "-tls1_2" => "TLSv1.2", "-tls1_3" => "TLSv1.3" }.each do |flag, version|
      out = s_client(flag, "-servername", "localhost", "-verify_return_error")
      # The handshake's line: the session block comes only once a TLS 1.3 ticket was read,
      # which s_client may end before.
      assert_match(/^New, #{Regexp.escape(version)}, Cipher is /, out, flag)
      assert_includes out, "Verify return code: 0 (ok)", flag
    end
    { "-tls1" => "TLSv1", "-tls1_1" => "TLSv1.1" }.each do |flag, version|
      assert_match(/Protocol\s*: #{Regexp.escape(version)}\n\s*Cipher\s*: [A-Z]/, reference_server_answers(flag),
                   "#{flag}: the client can speak it")
      out = s_client(flag, "-cipher", "DEFAULT@SECLEVEL=0")
      assert_includes out, "alert protocol version", flag
      assert_includes out, "New, (NONE), Cipher is (NONE)", flag
    end
  end

  # openssl s_server allowing the old versions, and s_client's view of a handshake with it.
  def reference_server_answers(flag)
    port = TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] }
    stdin, keep_open = IO.pipe # s_server stops at the end of its input
    pid = Process.spawn("openssl", "s_server", "-accept", port.to_s, "-naccept", "1", "-cert", localhost.cert_file,
                        "-key", localhost.key_file, flag, "-cipher", "DEFAULT@SECLEVEL=0",
                        in: stdin, %i[out err] => File::NULL)
    Timeout.timeout(10) { sleep 0.01 until listening?(port) }
    out, = Open3.capture2e("openssl", "s_client", "-connect", "127.0.0.1:#{port}", flag, "-cipher",
                           "DEFAULT@SECLEVEL=0", stdin_data: "")
    out
  ensure
    keep_open&.close
    stdin&.close
    Process.kill(:TERM, pid)
    Process.wait(pid)
  end

  # Whether something listens on port: binding it fails then, even with SO_REUSEADDR.
  def listening?(port)
    TCPServer.open("127.0.0.1", port).close
    false
  rescue Errno::EADDRINUSE
    true
  end

  def test_alpn_prefers_h2_and_keeps_http_1_1
    start_tls
    assert_includes s_client("-alpn", "http/1.1,h2"), "ALPN protocol: h2"
    assert_includes s_client("-alpn", "http/1.1"), "ALPN protocol: http/1.1"
    assert_match(/no application protocol/, s_client("-alpn", "spdy/3"))
    ssl = ssl_socket(alpn_protocols: %w[h2 http/1.1])
    assert_equal "h2", ssl.alpn_protocol
  end

  def test_alpn_answers_http_1_1_and_refuses_h2_alone_without_http2
    start_tls(http2: false)
    assert_includes s_client("-alpn", "h2,http/1.1"), "ALPN protocol: http/1.1"
    assert_match(/no application protocol/, s_client("-alpn", "h2"))
    ssl = ssl_socket(alpn_protocols: %w[h2 http/1.1])
    assert_equal "http/1.1", ssl.alpn_protocol
  end

  def test_sni_picks_the_certificate_by_host_name
    api = CA.issue("api.test")
    wild = CA.issue("*.wild.test", rsa: true)
    hosts = [{ host: "api.test", cert_file: api.cert_file, key_file: api.key_file },
             { host: "*.wild.test", cert_file: wild.cert_file, key_file: wild.key_file }]
    start_tls(tls: context(hosts: hosts))
    { "api.test" => api, "x.wild.test" => wild, "localhost" => localhost, "other.test" => localhost }.each do |name, want|
      ssl = ssl_socket(hostname: name, verify_hostname: false)
      assert_equal want.cert.serial, ssl.peer_cert.serial, name
      ssl.write("GET / HTTP/1.1\r\nHost: #{name}\r\nConnection: close\r\n\r\n")
      assert_includes ssl.read, "SERVER_NAME=#{name}"
    end
  end

  # Two servers with contexts that share the ticket secret (two workers of a cluster, or a
  # reload): a ticket from one resumes on the other; another secret means a full handshake.
  def test_sessions_resume_by_ticket_across_servers_sharing_the_secret
    first = start_tls.port
    sibling = start_tls(tls: context).port
    stranger = start_tls(tls: context(secret: Random.bytes(32))).port
    [OpenSSL::SSL::TLS1_2_VERSION, OpenSSL::SSL::TLS1_3_VERSION].each do |version|
      session = ticket_from(first, version)
      assert resumed?(first, session, version), "#{version}: the same server"
      assert resumed?(sibling, session, version), "#{version}: a server sharing the secret"
      refute resumed?(stranger, session, version), "#{version}: another secret"
    end
  end

  def exchange(ssl)
    ssl.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    read_response(ssl)
  end

  def ticket_from(port, version)
    ssl = ssl_socket(port, min_version: version, max_version: version)
    exchange(ssl) # a TLS 1.3 ticket comes after the handshake
    session = ssl.session
    ssl.close # a clean close: OpenSSL does not resume a session cut off
    session
  end

  def resumed?(port, session, version)
    ssl = OpenSSL::SSL::SSLSocket.new(TCPSocket.new("127.0.0.1", port),
                                      CA.client_context(min_version: version, max_version: version))
    ssl.sync_close = true
    ssl.hostname = "localhost"
    ssl.session = session
    ssl.connect
    exchange(ssl)
    ssl.session_reused?
  ensure
    ssl&.close
  end

  def test_plain_http_on_the_tls_port_gets_a_400_and_the_server_is_unharmed
    start_tls
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    res = raw_request("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert_equal 400, res.status
    assert_includes res.body, "HTTPS"
    assert closed_by_server?(@sockets.last, timeout: 1)
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0, :<, 1
    out, err, status = curl("https://localhost:#{@port}/after")
    assert status.success?, err
    assert_includes out, "PATH_INFO=/after"
  end

  # 1,000 clients that connect, send a record header and never the rest of their hello: real
  # clients are served all the while, and the head timeout closes the thousand.
  def test_a_thousand_unfinished_handshakes_do_not_stop_real_clients
    start_tls(head_timeout: 1)
    idle = Array.new(1000) do
      s = TCPSocket.new("127.0.0.1", @port)
      s.write("\x16\x03\x01\x02\x00")
      s
    end
    (@sockets ||= []).concat(idle)
    t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    10.times do |i|
      out, err, status = curl("https://localhost:#{@port}/real#{i}")
      assert status.success?, err
      assert_includes out, "PATH_INFO=/real#{i}"
    end
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0, :<, 5, "ten real requests"
    closed = idle.count { |s| closed_by_server?(s, timeout: 5) }
    assert_equal 1000, closed, "the head timeout closed every unfinished handshake"
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0, :<, 8
  end

  # New connections get the new certificate from the swap on; nothing fails meanwhile, and a
  # keep-alive connection made before goes on.
  def test_a_certificate_replaced_under_load_fails_no_request
    old_ctx = context
    start_tls(tls: old_ctx, threads: 4)
    renewed = CA.issue("localhost")
    kept = ssl_socket
    assert_equal 200, exchange(kept).status
    failures = Queue.new
    serials = Queue.new
    stop = false
    clients = Array.new(3) do
      Thread.new do
        until stop
          begin
            ssl = ssl_socket
            serials << ssl.peer_cert.serial
            failures << "status #{exchange(ssl).status}" unless exchange(ssl).status == 200
            ssl.close
          rescue StandardError => e
            failures << e
          end
        end
      end
    end
    sleep 0.3 until serials.size > 20
    @servers.first.server.replace_tls(old_ctx, context(renewed))
    sleep 0.05 until serials.size > 20 && serials.size.positive? && last_serial(serials) == renewed.cert.serial
    stop = true
    clients.each(&:join)
    assert_empty Array.new(failures.size) { failures.pop }
    assert_equal 200, exchange(kept).status, "the connection made before the swap goes on"
    assert_equal localhost.cert.serial, kept.peer_cert.serial
  end

  def last_serial(queue)
    last = nil
    last = queue.pop until queue.empty?
    queue << last
    last
  end

  # One server, a plain and a TLS listener: each env has its own transport's constants and
  # none of the other's (each transport has its own template, copied per request).
  def test_plain_and_tls_listeners_of_one_server_each_get_their_own_env
    app = lambda do |env|
      [200, {}, [%w[rack.url_scheme HTTPS rack.hijack?].map { |k| "#{k}=#{env.fetch(k, "-")}" }.join(" ")]]
    end
    server = Up::Server.new(app, threads: 1)
    server.log_io = StringIO.new
    sockets = Array.new(2) { TCPServer.new("127.0.0.1", 0) }
    server.listen_fd(sockets.first.fileno, context)
    server.listen_fd(sockets.last.fileno)
    tls_port, plain_port = sockets.map { |socket| socket.addr[1] }
    thread = Thread.new { server.run }
    tcp = TCPSocket.new("127.0.0.1", plain_port)
    (@sockets ||= []) << tcp
    ssl = ssl_socket(tls_port)
    2.times do
      tcp.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
      assert_equal "rack.url_scheme=http HTTPS=- rack.hijack?=true", read_response(tcp).body
      ssl.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
      assert_equal "rack.url_scheme=https HTTPS=on rack.hijack?=false", read_response(ssl).body
    end
  ensure
    server&.stop
    thread&.join(10)
    sockets&.each(&:close)
  end

  # The engine keeps the TLS session, so the socket alone is no use to an app: the env offers
  # no hijack, and a response that hands the connection to a callable anyway gets a 500.
  def test_no_hijack_over_tls
    server = start_tls(lambda do |env|
      case env["PATH_INFO"]
      when "/env" then [200, {}, ["#{env["rack.hijack?"].inspect} #{env.key?("rack.hijack")}"]]
      when "/partial" then [200, { "rack.hijack" => ->(io) { io.close } }, []]
      else [101, { "upgrade" => "lines", "connection" => "upgrade" }, ->(io) { io.close }]
      end
    end)
    ssl = ssl_socket
    ssl.write("GET /env HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert_equal "false false", read_response(ssl).body
    %w[/partial /101].each do |path|
      ssl = ssl_socket
      ssl.write("GET #{path} HTTP/1.1\r\nHost: localhost\r\nUpgrade: lines\r\nConnection: upgrade\r\n\r\n")
      assert_equal 500, read_response(ssl).status, path
    end
    # Reported before the 500 is written.
    assert_equal 2, server.log_text.scan("cannot be hijacked (TLS").size, server.log_text
  end

  class Echo
    def on_message(client, data)
      client.write(data)
    end
  end

  def test_websockets_over_tls
    start_tls(lambda { |env|
      env["rack.upgrade"] = Echo.new
      [101, {}, []]
    })
    ws = WSClient.open(@port, tls: CA.client_context)
    ws.text("hello over TLS")
    assert_equal "hello over TLS", ws.read_message.payload
    big = Random.bytes(2 * 1024 * 1024)
    ws.binary(big)
    assert_equal Digest::SHA256.hexdigest(big), Digest::SHA256.hexdigest(ws.read_message.payload)
    ws.close(1000)
    assert_equal 1000, ws.read_message.close_code
    assert ws.closed_by_server?
  ensure
    ws&.close_socket
  end

  class Ticker
    def on_open(client)
      3.times { |i| client.write("tick #{i}", id: i) }
      client.close
    end
  end

  def test_an_event_stream_over_tls
    start_tls(lambda { |env|
      env["rack.upgrade"] = Ticker.new
      [200, {}, []]
    })
    # HTTP/1.1: rack.upgrade is not offered on an HTTP/2 stream yet (test_http2.rb).
    out, err, status = curl("--http1.1", "-N", "-H", "Accept: text/event-stream", "https://localhost:#{@port}/events")
    assert status.success?, err
    assert_equal "id: 0\ndata: tick 0\n\nid: 1\ndata: tick 1\n\nid: 2\ndata: tick 2\n\n", out
  end

  def test_a_to_path_body_over_tls
    file = Tempfile.new("up-tls")
    data = Random.bytes(5 * 1024 * 1024 + 7)
    file.write(data)
    file.flush
    start_tls(->(_env) { [200, { "content-type" => "application/octet-stream" }, File.open(file.path)] })
    out, err, status = curl("https://localhost:#{@port}/file")
    assert status.success?, err
    assert_equal data.bytesize, out.bytesize
    assert_equal Digest::SHA256.hexdigest(data), Digest::SHA256.hexdigest(out)
  ensure
    file&.close!
  end
end
