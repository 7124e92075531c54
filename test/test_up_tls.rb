# frozen_string_literal: true

# HTTPS on `up`: the engine's TLS transport in the addon, with up_ruby's options and
# env: -s -c -k and ssl:// binds (Up::TLSSettings), rack.url_scheme https, HTTPS on, port 443
# by default; SNI from tls_host; -a's chain; the key's passphrase from its command; session
# tickets taken by every worker; and a certificate that does not load stops the start in one
# line rather than serve plaintext; certificates reloaded from their files on HUP, in one
# process and in every worker, seen by openssl s_client, while a connection made before goes
# on and a file that does not load keeps the old ones. Clients verify against the tests' CA
# (test/support/test_certificates.rb).
require "json"
require "net/http"
require "open3"
require "tmpdir"
require "fileutils"
require_relative "helper"
require_relative "support/test_certificates"
require_relative "support/up_process"

class TestUpTLS < Minitest::Test
  include UpTestHelpers
  include UpProcess

  CA = TestCertificates.ca
  HTTPS_LINE = %r{listening on (?:\S+, )*https://127\.0\.0\.1:(\d+)}

  def localhost
    @localhost ||= CA.issue("localhost")
  end

  def start_https(*args, cert: localhost)
    server = start_up("-s", "-c", cert.cert_file, "-k", cert.key_file, *args, wait: false)
    @port = server.wait_for(HTTPS_LINE)[1].to_i
    server
  end

  def start_refused(*args)
    server = CLIProcess.new("-w", "1", *args, UpProcess::FEATURES, command: [RbConfig.ruby, UpProcess::EXE],
                            env: { "XDG_CACHE_HOME" => UpProcess::CACHE }, wait: false)
    (@up_processes ||= []) << server
    refute server.wait(timeout: 30).success?
    server.output
  end

  def ssl_socket(port = @port, address: "127.0.0.1", hostname: "localhost", session: nil, **settings)
    ssl = OpenSSL::SSL::SSLSocket.new(TCPSocket.new(address, port), CA.client_context(**settings))
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

  # Net::HTTP verifying the certificate and the host name: the env says HTTPS as up_ruby's does.
  def test_net_http_verifies_and_the_env_says_https
    start_https
    http = Net::HTTP.new("localhost", @port)
    http.use_ssl = true
    http.verify_mode = OpenSSL::SSL::VERIFY_PEER
    http.ca_file = CA.ca_file
    http.open_timeout = http.read_timeout = 10
    env = http.start { JSON.parse(http.get("/env").body) }
    assert_equal ["https", "on", @port.to_s], env.values_at("rack.url_scheme", "HTTPS", "SERVER_PORT")
    no_port = JSON.parse(request(ssl_socket, host: "localhost").body)
    assert_equal %w[https on 443 localhost], no_port.values_at("rack.url_scheme", "HTTPS", "SERVER_PORT", "SERVER_NAME")
  end

  # The env over HTTPS is the one up_ruby builds, but for the port (neither has rack.hijack there,
  # and both say rack.hijack? false).
  def test_env_over_https_is_the_same_as_up_rubys
    ruby = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", "-t", "1", "-s", "-c", localhost.cert_file,
                          "-k", localhost.key_file, UpProcess::FEATURES, wait: false)
    ruby_port = ruby.wait_for(HTTPS_LINE)[1].to_i
    on_ruby = begin
      JSON.parse(request(ssl_socket(ruby_port)).body)
    ensure
      ruby.stop
    end
    start_https
    on_up = JSON.parse(request(ssl_socket).body)
    strings = ->(env) { env.select { |_k, v| [String, TrueClass, FalseClass].include?(v.class) } }
    assert_equal strings.call(on_ruby), strings.call(on_up)
  end

  # curl verifying the certificate: a streamed body, a 1 MB upload and keep-alive over one
  # connection (curl says when it reuses it).
  def test_curl_streams_uploads_and_keeps_the_connection
    start_https
    upload = File.join(CA.dir, "upload-up-#{Process.pid}.bin")
    File.binwrite(upload, "u" * 1_048_576)
    url = "https://localhost:#{@port}"
    out, err, status = Open3.capture3("curl", "-sS", "-v", "--max-time", "10", "--cacert", CA.ca_file,
                                      "#{url}/stream", "--next", "--cacert", CA.ca_file,
                                      "--data-binary", "@#{upload}", "#{url}/echo")
    assert status.success?, err
    assert_equal "part 0\npart 1\npart 2\nuuu|#{"u" * (1_048_576 - 3)}|1048576|ASCII-8BIT", out
    assert_includes err, "Re-using existing connection"
  end

  # An ssl:// bind beside a plain one: each serves what it says, and the line says both. (The
  # port 0 of the first TCP bind is every later one's: the ssl:// bind is on another address.)
  def test_an_ssl_bind_beside_a_plain_one
    bind = "ssl://127.0.0.2:0?cert=#{localhost.cert_file}&key=#{localhost.key_file}"
    server = CLIProcess.new("-w", "1", "-b", "tcp://127.0.0.1:0", "-b", bind, UpProcess::FEATURES,
                            command: [RbConfig.ruby, UpProcess::EXE], env: { "XDG_CACHE_HOME" => UpProcess::CACHE },
                            wait: false)
    (@up_processes ||= []) << server
    m = server.wait_for(%r{listening on http://127\.0\.0\.1:(\d+), https://127\.0\.0\.2:(\d+)})
    @port = m[1].to_i
    assert_equal "http", JSON.parse(get("/env").body)["rack.url_scheme"]
    assert_equal "https", JSON.parse(request(ssl_socket(m[2].to_i, address: "127.0.0.2")).body)["rack.url_scheme"]
  end

  def test_versions_alpn_and_plain_http
    start_https
    s_client = lambda do |*args|
      Open3.capture2e("openssl", "s_client", "-connect", "127.0.0.1:#{@port}", *args, stdin_data: "").first
    end
    assert_includes s_client.call("-tls1_2"), "New, TLSv1.2, Cipher is ECDHE-ECDSA-AES128-GCM-SHA256"
    assert_includes s_client.call("-tls1_3"), "New, TLSv1.3, Cipher is TLS_AES_128_GCM_SHA256"
    assert_includes s_client.call("-alpn", "http/1.1,h2"), "ALPN protocol: h2" # HTTP/2 preferred
    assert_includes s_client.call("-alpn", "http/1.1"), "ALPN protocol: http/1.1"
    sock = connect
    sock.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert_equal 400, read_response(sock).status, "plain HTTP on the TLS port: a 400 it can read, as up_ruby's"
    assert closed_by_server?(sock), "then the close"
    assert_equal 200, request(ssl_socket).status, "and the server goes on"
  end

  def test_tls_host_certificates_and_the_chain
    api = CA.issue("api.test")
    chained = CA.issue("localhost", intermediate: true)
    Dir.mktmpdir do |dir|
      config = File.join(dir, "up.rb")
      File.write(config, %(tls_host "api.test", cert_file: "#{api.cert_file}", key_file: "#{api.key_file}"\n))
      start_https("-C", config, "-a", chained.chain_file, cert: chained)
      assert_equal api.cert.serial, ssl_socket(hostname: "api.test").peer_cert.serial
      assert_equal chained.cert.serial, ssl_socket.peer_cert.serial, "verified through the chain -a sends"
      assert_equal 200, request(ssl_socket(hostname: "api.test"), host: "api.test").status
    end
  end

  # Every worker of a cluster takes the tickets of the others (the secret they share).
  def test_every_worker_takes_the_tickets_of_the_others
    start_https("-w", "2")
    first = ssl_socket(min_version: OpenSSL::SSL::TLS1_3_VERSION)
    assert_equal 200, request(first).status
    session = first.session
    first.close
    resumed = Array.new(6) do
      ssl = ssl_socket(session: session)
      request(ssl)
      ssl.session_reused?.tap { ssl.close }
    end
    assert_equal [true], resumed.uniq
  end

  def test_a_key_with_a_passphrase_and_certificates_that_do_not_load
    locked = CA.issue("localhost", password: "pw")
    out = start_refused("-b", "127.0.0.1", "-p", "0", "-s", "-c", locked.cert_file, "-k", locked.key_file)
    assert_includes out, "up: the key in #{locked.key_file} is encrypted and no passphrase was given; " \
                         "give it with --key-password-command"
    refute_match(/listening on/, out)
    start_https("--key-password-command", "echo pw", cert: locked)
    assert_equal locked.cert.serial, ssl_socket.peer_cert.serial
    out = start_refused("-b", "127.0.0.1", "-p", "0", "-s", "-c", "/nonexistent.pem", "-k", locked.key_file)
    assert_match(%r{up: .*/nonexistent\.pem}, out)
    assert_equal 1, out.lines.grep(/^up: /).size, out
    refute_match(/listening on/, out)
  end

  # The serial of the certificate openssl s_client gets for localhost on a new connection.
  def s_client_serial
    out, = Open3.capture2e("openssl", "s_client", "-connect", "127.0.0.1:#{@port}", "-servername", "localhost",
                           stdin_data: "")
    pem = out[/-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----/m]
    assert pem, "s_client got no certificate:\n#{out}"
    OpenSSL::X509::Certificate.new(pem).serial
  end

  def copy_of(cert, dir)
    files = TestCertificates::Issued.new(cert_file: File.join(dir, "cert.pem"), key_file: File.join(dir, "key.pem"))
    FileUtils.cp(cert.cert_file, files.cert_file)
    FileUtils.cp(cert.key_file, files.key_file)
    files
  end

  # The files are rewritten in place, as a renewal does, then the block reloads them (and waits
  # for the log to say so): new connections get the new certificate, the one made before goes
  # on with the old.
  def reloads(files)
    kept = ssl_socket
    assert_equal 200, request(kept).status
    old = kept.peer_cert.serial
    renewed = CA.issue("localhost")
    FileUtils.cp(renewed.cert_file, files.cert_file)
    FileUtils.cp(renewed.key_file, files.key_file)
    yield
    assert_equal renewed.cert.serial, s_client_serial, "new connections get the new certificate"
    assert_equal 200, request(kept).status, "the connection made before goes on"
    assert_equal old, kept.peer_cert.serial
    renewed
  end

  def test_hup_reloads_the_certificates_and_one_that_does_not_load_keeps_the_old
    Dir.mktmpdir do |dir|
      files = copy_of(localhost, dir)
      server = start_https(cert: files)
      assert_equal localhost.cert.serial, s_client_serial
      renewed = reloads(files) do
        server.signal(:HUP)
        server.wait_for(/HUP: reloaded the certificates \(CN = localhost\); new connections get them/)
      end
      File.write(files.cert_file, "not a certificate")
      server.signal(:HUP)
      server.wait_for(/HUP: the certificates were not reloaded, the old ones serve on: cannot load the certificate #{Regexp.escape(files.cert_file)}/)
      assert_equal renewed.cert.serial, s_client_serial
      assert_equal 200, request(ssl_socket).status
    end
  end

  def test_hup_reloads_the_certificates_of_every_worker
    Dir.mktmpdir do |dir|
      files = copy_of(localhost, dir)
      server = start_https("-w", "2", cert: files)
      server.wait_for(/worker 0 \(pid \d+\) booted.*\n(?:.*\n)*.*worker 1 \(pid \d+\) booted|worker 1 \(pid \d+\) booted.*\n(?:.*\n)*.*worker 0 \(pid \d+\) booted/)
      renewed = reloads(files) do
        server.signal(:HUP)
        server.wait_for(/worker \d: reloaded the certificates.*worker \d: reloaded the certificates/m)
      end
      # Both workers serve it: new connections land on either.
      assert_equal [renewed.cert.serial], Array.new(6) { s_client_serial }.uniq
      File.write(files.key_file, "not a key")
      server.signal(:HUP)
      server.wait_for(/worker \d: the certificates were not reloaded.*worker \d: the certificates were not reloaded/m)
      assert_equal [renewed.cert.serial], Array.new(4) { s_client_serial }.uniq
    end
  end
end
