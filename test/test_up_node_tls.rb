# frozen_string_literal: true

# HTTPS on up_node: Node's https with up_ruby's options, defaults and env:
# -s -c -k, TLS 1.2 and 1.3 only, ALPN h2 before http/1.1, plain HTTP closed, SNI from tls_host,
# session tickets taken by every worker of a cluster, certificates reloaded on HUP, and the
# one-line errors of a start that cannot load its certificate. Clients verify against the
# tests' CA (test/support/test_certificates.rb).
require "json"
require "open3"
require "tmpdir"
require_relative "helper"
require_relative "support/test_certificates"
require_relative "support/up_node_process"
require_relative "support/ws_client"

class TestUpNodeTLS < Minitest::Test
  include UpTestHelpers
  include UpNodeProcess

  CA = TestCertificates.ca
  HTTPS_LINE = %r{listening on (?:\S+, )*https://127\.0\.0\.1:(\d+)}

  def localhost
    @localhost ||= CA.issue("localhost")
  end

  def start_https(*args, cert: localhost)
    server = start_up_node("-s", "-c", cert.cert_file, "-k", cert.key_file, *args, wait: false)
    @port = server.wait_for(HTTPS_LINE)[1].to_i
    server
  end

  def ssl_socket(port = @port, hostname: "localhost", session: nil, **settings)
    ssl = OpenSSL::SSL::SSLSocket.new(TCPSocket.new("127.0.0.1", port), CA.client_context(**settings))
    ssl.sync_close = true
    ssl.hostname = hostname
    ssl.session = session if session
    ssl.connect
    (@sockets ||= []) << ssl
    ssl
  end

  def request(ssl, target = "/env", host: "localhost")
    ssl.write("GET #{target} HTTP/1.1\r\nHost: #{host}\r\n\r\n")
    read_response(ssl)
  end

  # The env over HTTPS is the one up_ruby builds, but for the port each server got.
  def test_env_over_https_is_the_same_as_up_rubys
    ruby = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", "-t", "1", "-s", "-c", localhost.cert_file,
                          "-k", localhost.key_file, UpNodeProcess::FEATURES, wait: false)
    ruby_port = ruby.wait_for(HTTPS_LINE)[1].to_i
    on_ruby = begin
      ["localhost", "localhost:#{ruby_port}"].map { |host| request(ssl_socket(ruby_port), host: host).body.gsub(ruby_port.to_s, "PORT") }
    ensure
      ruby.stop
    end
    start_https
    on_node = ["localhost", "localhost:#{@port}"].map { |host| request(ssl_socket, host: host).body.gsub(@port.to_s, "PORT") }
    assert_equal on_ruby.map { |body| JSON.parse(body) }, on_node.map { |body| JSON.parse(body) }
    env = JSON.parse(on_node.first)
    assert_equal %w[https on 443], env.values_at("rack.url_scheme", "HTTPS", "SERVER_PORT")
  end

  # curl verifying the certificate: a streamed body, a 1 MB upload and keep-alive over one
  # connection (curl says when it reuses it).
  def test_curl_streams_uploads_and_keeps_the_connection
    start_https
    upload = File.join(CA.dir, "upload-#{Process.pid}.bin")
    File.binwrite(upload, "u" * 1_048_576)
    url = "https://localhost:#{@port}"
    out, err, status = Open3.capture3("curl", "-sS", "-v", "--max-time", "10", "--cacert", CA.ca_file,
                                      "#{url}/stream", "--next", "--cacert", CA.ca_file,
                                      "--data-binary", "@#{upload}", "#{url}/echo")
    assert status.success?, err
    assert_equal "part 0\npart 1\npart 2\nuuu|#{"u" * (1_048_576 - 3)}|1048576|ASCII-8BIT", out
    assert_includes err, "Re-using existing connection"
  end

  # WebSockets (Node's ws on the https server) and an event stream, over TLS.
  def test_a_websocket_and_an_event_stream_over_tls
    start_https(File.join(CLIProcess::ROOT, "test/rackup/ws_echo.ru"))
    ws = WSClient.open(@port, tls: CA.client_context)
    ws.text("hello over TLS")
    assert_equal "hello over TLS", ws.read_message.payload
    big = Random.bytes(300_000)
    ws.binary(big)
    assert_equal big, ws.read_message.payload
    ws.close(1000)
    assert_equal 1000, ws.read_message.close_code
  ensure
    ws&.close_socket
  end

  def test_an_event_stream_over_tls
    Dir.mktmpdir do |dir|
      app = File.join(dir, "ticks.ru")
      File.write(app, <<~RUBY)
        class Ticker
          def on_open(client)
            3.times { |i| client.write("tick \#{i}", id: i) }
            client.close
          end
        end
        run ->(env) { env["rack.upgrade"] = Ticker.new; [200, {}, []] }
      RUBY
      start_https(app)
      out, err, status = Open3.capture3("curl", "-sS", "-N", "--max-time", "10", "--cacert", CA.ca_file,
                                        "-H", "Accept: text/event-stream", "https://localhost:#{@port}/events")
      assert status.success?, err
      assert_equal "id: 0\ndata: tick 0\n\nid: 1\ndata: tick 1\n\nid: 2\ndata: tick 2\n\n", out
    end
  end

  def test_versions_alpn_and_plain_http
    start_https
    s_client = lambda do |*args|
      Open3.capture2e("openssl", "s_client", "-connect", "127.0.0.1:#{@port}", *args, stdin_data: "").first
    end
    assert_includes s_client.call("-tls1_2"), "New, TLSv1.2, Cipher is ECDHE-ECDSA-AES128-GCM-SHA256"
    assert_includes s_client.call("-tls1_3"), "New, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256"
    assert_includes s_client.call("-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"), "alert protocol version"
    assert_includes s_client.call("-alpn", "h2,http/1.1"), "ALPN protocol: h2"
    assert_includes s_client.call("-alpn", "http/1.1,h2"), "ALPN protocol: h2"
    assert_includes s_client.call("-alpn", "http/1.1"), "ALPN protocol: http/1.1"
    assert_includes s_client.call("-alpn", "spdy/3"), "no application protocol"
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert closed_by_server?(sock, timeout: 1), "plain HTTP on the TLS port: a clean close within a second"
    assert_equal 200, request(ssl_socket).status, "and the server goes on"
  end

  def test_tls_host_certificates_and_a_reload_on_hup
    api = CA.issue("api.test")
    Dir.mktmpdir do |dir|
      files = { cert: File.join(dir, "cert.pem"), key: File.join(dir, "key.pem") }
      FileUtils.cp(localhost.cert_file, files[:cert])
      FileUtils.cp(localhost.key_file, files[:key])
      config = File.join(dir, "up.rb")
      File.write(config, %(tls_host "api.test", cert_file: "#{api.cert_file}", key_file: "#{api.key_file}"\n))
      server = start_https("-C", config, cert: TestCertificates::Issued.new(cert_file: files[:cert], key_file: files[:key]))
      assert_equal api.cert.serial, ssl_socket(hostname: "api.test").peer_cert.serial
      kept = ssl_socket
      assert_equal localhost.cert.serial, kept.peer_cert.serial
      renewed = CA.issue("localhost")
      FileUtils.cp(renewed.cert_file, files[:cert])
      FileUtils.cp(renewed.key_file, files[:key])
      server.signal(:HUP)
      server.wait_for(/reloaded the certificates/)
      assert_equal renewed.cert.serial, ssl_socket.peer_cert.serial, "new connections get the new certificate"
      assert_equal 200, request(kept).status, "the connection made before goes on"
    end
  end

  # node:cluster spreads connections over the workers: every one takes the tickets of the
  # others, as they share the secret.
  def test_every_worker_takes_the_tickets_of_the_others
    start_https("-w", "2")
    first = ssl_socket(min_version: OpenSSL::SSL::TLS1_3_VERSION)
    assert_equal 200, request(first).status
    session = first.session
    first.close
    # /calls counts each worker's requests, and each connection adds one (its /env): on one
    # worker they go up by one every time, so a count that does not shows the other worker.
    # Connections are made until it has served (node:cluster hands them out in turns).
    counts = []
    resumed = []
    until counts.size >= 2 && counts.each_cons(2).any? { |a, b| b != a + 1 } || counts.size == 20
      ssl = ssl_socket(session: session)
      request(ssl, "/env")
      counts << Integer(request(ssl, "/calls").body)
      resumed << ssl.session_reused?
      ssl.close
    end
    assert_equal [true], resumed.uniq
    assert_operator counts.size, :<, 20, "both workers served: #{counts.inspect}"
  end

  # A certificate signed by an intermediate CA verifies only with the chain -a sends.
  def test_a_sends_the_chain
    cert = CA.issue("localhost", intermediate: true)
    start_https("-a", cert.chain_file, cert: cert)
    assert_equal cert.cert.serial, ssl_socket.peer_cert.serial
    assert_equal 200, request(ssl_socket).status
  end

  def test_a_certificate_that_does_not_load_is_one_line
    locked = CA.issue("localhost", password: "pw")
    status, out = run_up_node("-s", "-c", locked.cert_file, "-k", locked.key_file)
    assert_equal 1, status.exitstatus
    assert_includes out, "up_node: the key in #{locked.key_file} is encrypted and no passphrase was given; " \
                         "give it with --key-password-command"
    server = start_https("--key-password-command", "echo pw", cert: locked)
    assert_equal locked.cert.serial, ssl_socket.peer_cert.serial
    close_sockets
    server.stop
    status, out = run_up_node("-s", "-c", "/nonexistent.pem", "-k", locked.key_file)
    assert_equal 1, status.exitstatus
    assert_includes out, "up_node: cannot load the certificate /nonexistent.pem"
  end
end
