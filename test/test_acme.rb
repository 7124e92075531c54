# frozen_string_literal: true

# Certificates by ACME (RFC 8555) against Debian's pebble, which really validates: HTTP-01
# answered from a plain bind, TLS-ALPN-01 (RFC 8737) by the engine on the HTTPS bind, the
# served chain verified by Ruby's OpenSSL against pebble's root (from its management API),
# renewal of pebble's short-lived certificates in the same process while a keep-alive
# connection made before goes on, an order that fails keeping the certificate served, and the
# --acme-dir's files mode 0600. No test talks to a real CA.
require "open3"
require "tmpdir"
require_relative "helper"
require_relative "support/cli_process"
require_relative "support/pebble"

class TestACME < Minitest::Test
  include UpTestHelpers

  ISSUED = /ACME: [^\n]*: certificate from CN=Pebble Intermediate CA/
  HELLO = "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"

  def time_limit_seconds
    90
  end

  def setup
    @dir = Dir.mktmpdir("up-acme")
    @http_port = Pebble.free_port
    @tls_port = Pebble.free_port
  end

  def teardown
    @server&.stop
    @pebble&.stop
    FileUtils.remove_entry(@dir)
    super
  end

  # pebble, then up_ruby on its ports, its binds (plain HTTP unless tls_only) and names.
  def start(names, validity: 3600, tls_only: false, workers: 2)
    @pebble = Pebble.new(http_port: @http_port, tls_port: @tls_port, validity: validity).start
    binds = tls_only ? [] : ["-b", "tcp://127.0.0.1:#{@http_port}"]
    acme = names.flat_map { |n| ["--acme-domain", n] }
    @server = CLIProcess.new(*binds, "-b", "ssl://127.0.0.1:#{@tls_port}", "-w", workers.to_s,
                             "--keepalive-timeout", "120", *acme, "--acme-dir", File.join(@dir, "acme"),
                             "--acme-directory", @pebble.directory, "--acme-ca-file", @pebble.ca_file,
                             "--acme-email", "ops@example.com", "test/rackup/hello.ru", wait: false)
    @server.wait_for(/listening on/)
    @workers = workers
    @root = OpenSSL::X509::Certificate.new(@pebble.root_pem)
  end

  # A TLS connection to the server that verifies its chain against pebble's root and name.
  def connect(name)
    store = OpenSSL::X509::Store.new
    store.add_cert(@root)
    ctx = OpenSSL::SSL::SSLContext.new
    ctx.set_params(verify_mode: OpenSSL::SSL::VERIFY_PEER, cert_store: store)
    ssl = OpenSSL::SSL::SSLSocket.new(TCPSocket.new("127.0.0.1", @tls_port), ctx)
    ssl.sync_close = true
    ssl.hostname = name
    ssl.connect
    (@sockets ||= []) << ssl
    ssl
  end

  def hello(ssl)
    ssl.write(HELLO)
    read_response(ssl).body
  end

  # The serial a fresh, verified connection for name gets, after a request on it.
  def served_serial(name)
    ssl = connect(name)
    assert_equal "Hello World", hello(ssl)
    ssl.peer_cert.serial
  ensure
    ssl&.close
  end

  def count(pattern)
    @server.read_available
    @server.output.scan(pattern).size
  end

  # Waits until the n-th certificate is issued and served: loaded by the one process, or by
  # every worker (each reloads on its own once the master tells it).
  def wait_served(n, timeout: 40)
    loaders = @workers.zero? ? [/ACME: reloaded the certificates/] : (0...@workers).map { |i| /worker #{i}: reloaded the certificates/ }
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    until count(ISSUED) >= n && loaders.all? { |l| count(l) >= n }
      flunk "certificate #{n} not served in #{timeout} s; output:\n#{@server.output}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.1
    end
  end

  # The start stops with one line, status 1; out is what it said.
  def refused(*args, exe: "up_ruby", env: {})
    out, status = Open3.capture2e(env, RbConfig.ruby, File.join(CLIProcess::ROOT, "exe", exe), *args,
                                  "test/rackup/hello.ru", chdir: CLIProcess::ROOT)
    assert_equal 1, status.exitstatus, out
    out
  end

  def test_a_start_without_what_acme_needs_stops_with_one_line
    dir = ["--acme-dir", File.join(@dir, "acme")]
    assert_match(/--acme-domain needs --acme-dir/, refused("-s", "-p", "0", "--acme-domain", "a.example.com"))
    assert_match(/--acme-domain needs an HTTPS bind/, refused("-p", "0", "--acme-domain", "a.example.com", *dir))
    assert_match(/--acme-domain and -c\/-k both name the certificate/,
                 refused("-s", "-p", "0", "-c", "x.pem", "-k", "x.key", "--acme-domain", "a.example.com", *dir))
    assert_match(/--acme-domain "\*.example.com" is not a domain name/, refused("-s", "--acme-domain", "*.example.com", *dir))
    assert_match(/--acme-domain "localhost" is not a domain name/, refused("-s", "--acme-domain", "localhost", *dir))
    refute File.exist?(File.join(@dir, "acme")), "nothing is written before the start is known to go on"
  end

  def test_up_node_refuses_acme
    out = refused("-s", "--acme-domain", "a.example.com", "--acme-dir", File.join(@dir, "acme"), exe: "up_node",
                  env: { "XDG_CACHE_HOME" => File.join(@dir, "cache") })
    assert_includes out, "--acme-domain is not supported by up_node yet"
  end

  def test_http01_issues_a_certificate_that_verifies_against_pebbles_root
    start(["up.acme.test"])
    wait_served(1)
    assert_match(/ACME: serving a self-signed placeholder for up.acme.test until the first certificate comes/, @server.output)
    ssl = connect("up.acme.test")
    assert_equal "Hello World", hello(ssl)
    assert_equal "up.acme.test", ssl.peer_cert.subject.to_a.assoc("CN")[1]
    assert_equal 2, ssl.peer_cert_chain.size, "the chain is sent: the certificate and pebble's intermediate"
    # pebble validated over plain HTTP: the answer came from the static handler.
    assert_match(/up\.acme\.test: certificate from/, @server.output)
  end

  def test_tls_alpn01_issues_on_the_https_bind_alone
    start(%w[alpn.acme.test www.alpn.acme.test], tls_only: true)
    wait_served(1)
    %w[alpn.acme.test www.alpn.acme.test].each do |name|
      ssl = connect(name)
      assert_equal "Hello World", hello(ssl)
    end
  end

  # Only a client that offers acme-tls/1 alone gets it; the challenge certificate is there
  # only while an order is open, so afterwards such a client's handshake fails.
  def test_acme_tls_1_alone_gets_no_certificate_outside_an_order
    start(["alpn.acme.test"], tls_only: true)
    wait_served(1)
    ctx = OpenSSL::SSL::SSLContext.new
    ctx.alpn_protocols = ["acme-tls/1"]
    ssl = OpenSSL::SSL::SSLSocket.new(TCPSocket.new("127.0.0.1", @tls_port), ctx)
    ssl.hostname = "alpn.acme.test"
    assert_raises(OpenSSL::SSL::SSLError) { ssl.connect }
  ensure
    ssl&.close
  end

  def test_files_are_mode_0600
    start(["up.acme.test"], workers: 0)
    wait_served(1)
    dir = File.join(@dir, "acme")
    assert_equal 0o700, File.stat(dir).mode & 0o777
    %w[account.key certificate.pem certificate.key].each do |file|
      assert_equal 0o600, File.stat(File.join(dir, file)).mode & 0o777, file
    end
    cert = OpenSSL::X509::Certificate.new(File.read(File.join(dir, "certificate.pem")))
    assert cert.check_private_key(OpenSSL::PKey.read(File.read(File.join(dir, "certificate.key"))))
  end

  # pebble's certificates live 15 s here, so a renewal is due a third before their end.
  def test_renewal_takes_effect_without_a_restart_and_open_connections_go_on
    start(["up.acme.test"], validity: 15)
    wait_served(1)
    old = connect("up.acme.test")
    assert_equal "Hello World", hello(old)
    first = old.peer_cert.serial
    wait_served(2)
    Process.kill(0, @server.pid) # the same master, never restarted, and its first workers
    refute_match(/re-executing/, @server.output)
    assert_equal 2, count(/worker \d booted/)
    refute_equal first, served_serial("up.acme.test")
    assert_equal "Hello World", hello(old), "a connection made before the renewal goes on"
    assert_equal first, old.peer_cert.serial
    # Workers forked from now on start with the master's copy, which took the new one too.
    pids = @server.output.scan(/worker \d booted \(pid (\d+)\)/).flatten.map(&:to_i)
    pids.each { |pid| Process.kill(:KILL, pid) }
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 30
    sleep 0.1 until count(/worker \d booted/) == 4 || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    assert_equal 4, count(/worker \d booted/), @server.output
    refute_equal first, served_serial("up.acme.test")
  end

  def test_a_failed_order_keeps_the_certificate_served
    start(["up.acme.test"], validity: 30)
    wait_served(1)
    first = served_serial("up.acme.test")
    @pebble.stop_acme
    @server.wait_for(/ACME: up\.acme\.test: the order failed \([^\n]*\); the certificate served stays; next try in 10 s/,
                     timeout: 40)
    assert_equal first, served_serial("up.acme.test")
  end
end
