# frozen_string_literal: true

# HTTPS from the command line: -s with -c and -k, and the one-line errors when
# one is missing or a key is encrypted without --key-password-command; -s in development
# alone makes a self-signed localhost certificate; plain and ssl:// binds on one server;
# tls_host certificates by SNI from the config file; and certificates reloaded from disk on
# HUP and by `upctl reload-certs`, in one process and in a cluster, while a connection made
# before goes on. The clients are curl and Ruby's OpenSSL, verifying against the tests' CA.
require "json"
require "open3"
require "tmpdir"
require_relative "helper"
require_relative "support/cli_process"
require_relative "support/test_certificates"

class TestTLSCLI < Minitest::Test
  include UpTestHelpers

  CA = TestCertificates.ca
  UPCTL = File.join(CLIProcess::ROOT, "exe", "upctl")
  HTTPS_LINE = %r{listening on (?:\S+, )*https://127\.0\.0\.1:(\d+)}

  def teardown
    (@processes || []).each(&:stop)
    super
  end

  # up_ruby with args, once it listens on HTTPS; its port in @port.
  def up(*args, env: {})
    process = CLIProcess.new("-b", "127.0.0.1", "-p", "0", *args, "test/rackup/hello.ru", wait: false, env: env)
    (@processes ||= []) << process
    @port = process.wait_for(HTTPS_LINE)[1].to_i
    process
  end

  # A server without TLS never loads Ruby's OpenSSL (only the development certificate needs
  # it): its objects would sit in every worker's heap, and each garbage collection marks them.
  def test_a_server_without_tls_does_not_load_openssl
    process = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "test/rackup/openssl_loaded.ru")
    (@processes ||= []) << process
    assert_equal "nil", get("/", port: process.port).body
  end

  # up_ruby expected to refuse to start: its output.
  def refused(*args, env: {})
    out, status = Open3.capture2e(env, RbConfig.ruby, CLIProcess::EXE, "-b", "127.0.0.1", "-p", "0", *args,
                                  "test/rackup/hello.ru", chdir: CLIProcess::ROOT)
    assert_equal 1, status.exitstatus, out
    out
  end

  def ssl_socket(port = @port, hostname: "localhost", ca_file: CA.ca_file)
    ctx = OpenSSL::SSL::SSLContext.new
    ctx.set_params(verify_mode: OpenSSL::SSL::VERIFY_PEER, ca_file: ca_file)
    ssl = OpenSSL::SSL::SSLSocket.new(TCPSocket.new("127.0.0.1", port), ctx)
    ssl.sync_close = true
    ssl.hostname = hostname
    ssl.connect
    (@sockets ||= []) << ssl
    ssl
  end

  def hello(ssl)
    ssl.write("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    read_response(ssl)
  end

  def served_serial(port = @port)
    ssl = ssl_socket(port)
    assert_equal "Hello World", hello(ssl).body
    ssl.peer_cert.serial
  ensure
    ssl&.close
  end

  def test_s_serves_https_with_c_and_k
    cert = CA.issue("localhost")
    up("-s", "-c", cert.cert_file, "-k", cert.key_file, "-w", "1")
    out, err, status = Open3.capture3("curl", "-sS", "--cacert", CA.ca_file, "--resolve", "localhost:#{@port}:127.0.0.1",
                                      "https://localhost:#{@port}/")
    assert status.success?, err
    assert_equal "Hello World", out
  end

  # The certificate is signed by an intermediate CA the client does not know: it verifies only
  # when the server sends the chain, from -a or from ca= in an ssl:// bind.
  def test_a_and_ca_send_the_chain
    cert = CA.issue("localhost", intermediate: true)
    up("-s", "-c", cert.cert_file, "-k", cert.key_file, "-w", "1")
    assert_raises(OpenSSL::SSL::SSLError, "without the chain, the client cannot verify") { ssl_socket }
    up("-s", "-c", cert.cert_file, "-k", cert.key_file, "-a", cert.chain_file, "-w", "1")
    assert_equal cert.cert.serial, served_serial
    bind = "ssl://127.0.0.1:0?cert=#{cert.cert_file}&key=#{cert.key_file}&ca=#{cert.chain_file}"
    process = CLIProcess.new("-w", "1", "-b", bind, "test/rackup/hello.ru", wait: false)
    (@processes ||= []) << process
    assert_equal cert.cert.serial, served_serial(process.wait_for(HTTPS_LINE)[1].to_i)
  end

  def test_s_without_its_files_names_what_is_missing
    cert = CA.issue("localhost")
    assert_includes refused("-s", "-e", "production"), "HTTPS needs -c/--cert-file and -k/--key-file"
    assert_includes refused("-s", "-c", cert.cert_file, "-e", "production"), "-k/--key-file"
    assert_includes refused("-s", "-k", cert.key_file), "-c/--cert-file"
    out = refused("-s", "-c", "/nonexistent.pem", "-k", cert.key_file)
    assert_equal "up_ruby: cannot load the certificate /nonexistent.pem: No such file or directory\n", out
  end

  def test_an_encrypted_key_needs_the_password_command
    cert = CA.issue("localhost", password: "pass phrase")
    assert_includes refused("-s", "-c", cert.cert_file, "-k", cert.key_file),
                    "is encrypted and no passphrase was given; give it with --key-password-command"
    assert_includes refused("-s", "-c", cert.cert_file, "-k", cert.key_file, "--key-password-command", "echo wrong"),
                    "cannot decrypt the key"
    up("-s", "-c", cert.cert_file, "-k", cert.key_file, "-w", "1", "--key-password-command", "echo 'pass phrase'")
    assert_equal cert.cert.serial, served_serial
  end

  def test_s_in_development_makes_a_self_signed_localhost_certificate
    Dir.mktmpdir do |tmp|
      process = up("-s", "-w", "1", env: { "TMPDIR" => tmp, "RACK_ENV" => nil })
      path = process.output[/self-signed certificate for localhost, (\S+\.crt)/, 1]
      assert path&.start_with?(tmp), process.output
      assert_includes process.output, "never use it in production"
      ssl = ssl_socket(ca_file: path)
      assert_equal "Hello World", hello(ssl).body
      assert_includes refused("-s", "-e", "production", env: { "TMPDIR" => tmp }), "only in development"
    end
  end

  def test_plain_and_ssl_binds_on_one_server
    cert = CA.issue("localhost")
    plain, tls = Array.new(2) { TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] } }
    process = CLIProcess.new("-w", "1", "-b", "tcp://127.0.0.1:#{plain}",
                             "-b", "ssl://127.0.0.1:#{tls}?cert=#{cert.cert_file}&key=#{cert.key_file}",
                             "test/rackup/hello.ru", wait: false)
    (@processes ||= []) << process
    process.wait_for(/listening on http:\/\/127\.0\.0\.1:#{plain}, https:\/\/127\.0\.0\.1:#{tls} /)
    assert_equal "Hello World", get("/", port: plain).body
    assert_equal cert.cert.serial, served_serial(tls)
  end

  # A hot restart re-executes with the sockets open: the new image knows which of them serve
  # HTTPS (UP_LISTEN_FDS carries each socket's bind).
  def test_a_hot_restart_keeps_https_on_its_socket
    cert = CA.issue("localhost")
    plain = TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] }
    process = up("-s", "-c", cert.cert_file, "-k", cert.key_file, "-w", "2", "-b", "tcp://127.0.0.1:#{plain}")
    # Workers boot in any order: worker 1 first leaves worker 0 still to come.
    old = Array.new(2) { |i| process.wait_for(/worker #{i} booted \(pid (\d+)\)/)[1] }
    process.signal(:USR2)
    process.wait_for(/re-executing.*listening on .*https:\/\/127\.0\.0\.1:#{@port}.*worker 1 booted/m)
    # Only the new image's workers are left to answer.
    old.each { |pid| process.wait_for(/\(pid #{pid}\) stopped/) }
    assert_equal cert.cert.serial, served_serial
    assert_equal cert.cert.serial, served_serial(plain), "-s made every bind HTTPS"
  end

  # The engine's static files over TLS: a 1 MB file whole (through the TLS transport, not
  # sendfile), and static.json's https_only, which redirects the plain bind of the same server
  # and serves its ssl:// bind.
  def test_static_files_over_https_and_https_only
    cert = CA.issue("localhost")
    Dir.mktmpdir do |dir|
      FileUtils.mkdir_p(File.join(dir, "public"))
      data = Random.bytes(1_048_576 + 7)
      File.binwrite(File.join(dir, "public", "big.bin"), data)
      File.write(File.join(dir, "static.json"), JSON.generate("root" => File.join(dir, "public"), "https_only" => true))
      plain = TCPServer.open("127.0.0.1", 0) { |s| s.addr[1] }
      process = CLIProcess.new("-w", "1", "-b", "tcp://127.0.0.1:#{plain}",
                               "-b", "ssl://127.0.0.1:0?cert=#{cert.cert_file}&key=#{cert.key_file}",
                               "--static-only", "--static-config", File.join(dir, "static.json"), wait: false)
      (@processes ||= []) << process
      @port = process.wait_for(HTTPS_LINE)[1].to_i
      moved = get("/big.bin", port: plain)
      assert_equal [301, "https://localhost/big.bin"], [moved.status, moved["location"]]
      out, err, status = Open3.capture3("curl", "-sS", "--max-time", "10", "--cacert", CA.ca_file,
                                        "https://localhost:#{@port}/big.bin", binmode: true)
      assert status.success?, err
      assert_equal data.bytesize, out.bytesize
      assert out == data, "the file's bytes"
    end
  end

  def test_tls_host_certificates_from_the_config_file
    default = CA.issue("localhost")
    api = CA.issue("api.test")
    Dir.mktmpdir do |dir|
      config = File.join(dir, "up.rb")
      File.write(config, <<~RUBY)
        bind "ssl://127.0.0.1:0?cert=#{default.cert_file}&key=#{default.key_file}"
        tls_host "api.test", cert_file: "#{api.cert_file}", key_file: "#{api.key_file}"
      RUBY
      process = CLIProcess.new("-C", config, "-w", "1", "test/rackup/hello.ru", wait: false)
      (@processes ||= []) << process
      @port = process.wait_for(HTTPS_LINE)[1].to_i
      assert_equal api.cert.serial, ssl_socket(hostname: "api.test").peer_cert.serial
      assert_equal default.cert.serial, served_serial
    end
  end

  # The files are rewritten in place, as a renewal does, then the block reloads them (and waits
  # for the log to say so); the connection made before keeps going on its old certificate.
  def reloads(files)
    kept = ssl_socket
    assert_equal "Hello World", hello(kept).body
    old = kept.peer_cert.serial
    renewed = CA.issue("localhost")
    FileUtils.cp(renewed.cert_file, files.cert_file)
    FileUtils.cp(renewed.key_file, files.key_file)
    yield
    assert_equal renewed.cert.serial, served_serial, "new connections get the new certificate"
    assert_equal "Hello World", hello(kept).body, "the connection made before goes on"
    assert_equal old, kept.peer_cert.serial
  end

  def copy_of(cert, dir)
    files = TestCertificates::Issued.new(cert_file: File.join(dir, "cert.pem"), key_file: File.join(dir, "key.pem"))
    FileUtils.cp(cert.cert_file, files.cert_file)
    FileUtils.cp(cert.key_file, files.key_file)
    files
  end

  def test_hup_and_upctl_reload_the_certificates_in_one_process
    Dir.mktmpdir do |dir|
      files = copy_of(CA.issue("localhost"), dir)
      ctl = "unix://#{dir}/ctl.sock"
      process = up("-s", "-c", files.cert_file, "-k", files.key_file, "-w", "1", "--control-url", ctl,
                   "--control-token", "t")
      reloads(files) do
        process.signal(:HUP)
        process.wait_for(/HUP: reloaded the certificates \(CN = localhost\)/)
      end
      reloads(files) do
        _out, err, status = Open3.capture3(RbConfig.ruby, UPCTL, "-C", ctl, "-T", "t", "reload-certs")
        assert status.success?, err
        process.wait_for(/HUP: reloaded.*HUP: reloaded/m)
      end
      # A certificate that does not load keeps the old one.
      File.write(files.cert_file, "not a certificate")
      process.signal(:HUP)
      process.wait_for(/HUP: the certificates were not reloaded, the old ones serve on: cannot load the certificate/)
      assert_equal "Hello World", hello(ssl_socket).body
    end
  end

  def test_hup_reloads_the_certificates_of_every_worker
    Dir.mktmpdir do |dir|
      files = copy_of(CA.issue("localhost"), dir)
      process = up("-s", "-c", files.cert_file, "-k", files.key_file, "-w", "2")
      process.wait_for(/worker 1 booted/)
      reloads(files) do
        process.signal(:HUP)
        process.wait_for(/worker \d: reloaded the certificates.*worker \d: reloaded the certificates/m)
      end
      renewed = served_serial
      # Both workers serve it: new connections land on either.
      assert_equal [renewed], Array.new(6) { served_serial }.uniq
      # So do workers forked after the reload: the master took the new certificate too.
      pids = process.output.scan(/worker \d booted \(pid (\d+)\)/).flatten.map(&:to_i)
      pids.each { |pid| Process.kill(:KILL, pid) }
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 30
      until process.output.scan(/worker \d booted/).size == 4 || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        sleep 0.1
        process.read_available
      end
      assert_equal [renewed], Array.new(6) { served_serial }.uniq
    end
  end
end
