# frozen_string_literal: true

require "json"
require "net/http"
require "openssl"
require "socket"
require "tmpdir"
require_relative "cli_process"
require_relative "test_certificates"

# Debian's pebble, the ACME test server, run on loopback for one test: its directory's HTTPS
# with a certificate of the tests' CA (TestCertificates), its validation authority told to
# reach the server under test on http_port (HTTP-01) and tls_port (TLS-ALPN-01), and every
# name resolved to 127.0.0.1 by pebble-challtestsrv's DNS, started beside it. Pebble really
# validates: PEBBLE_VA_ALWAYS_VALID is never set. Certificates live validity seconds.
class Pebble
  attr_reader :directory, :ca_file

  # A port no one listens on now, for TCP and UDP (the DNS server takes both).
  def self.free_port
    loop do
      tcp = TCPServer.new("127.0.0.1", 0)
      port = tcp.addr[1]
      udp = UDPSocket.new
      begin
        udp.bind("127.0.0.1", port)
        return port
      rescue SystemCallError
        next
      ensure
        udp.close
        tcp.close
      end
    end
  end

  def initialize(http_port:, tls_port:, validity: 3600)
    @dir = Dir.mktmpdir("pebble")
    @ca_file = TestCertificates.ca.ca_file
    @http_port = http_port
    @tls_port = tls_port
    @validity = validity
    @processes = []
  end

  def start
    dns = Pebble.free_port
    @processes << CLIProcess.new("-defaultIPv4", "127.0.0.1", "-defaultIPv6", "", "-dns01", "127.0.0.1:#{dns}",
                                 "-http01", "", "-https01", "", "-tlsalpn01", "",
                                 "-management", "127.0.0.1:#{Pebble.free_port}",
                                 command: ["pebble-challtestsrv"], wait: false)
    @processes.last.wait_for(/Starting management server/)
    listen = Pebble.free_port
    @management = Pebble.free_port
    @processes << CLIProcess.new("-config", config(listen), "-dnsserver", "127.0.0.1:#{dns}",
                                 command: ["pebble"], wait: false, env: { "PEBBLE_VA_NOSLEEP" => "1" })
    @processes.last.wait_for(/ACME directory available at/)
    @directory = "https://127.0.0.1:#{listen}/dir"
    self
  end

  # Pebble's root, which signs what it issues (a new one each run), from its management API.
  def root_pem
    uri = URI("https://127.0.0.1:#{@management}/roots/0")
    Net::HTTP.start(uri.host, uri.port, use_ssl: true, ca_file: @ca_file, verify_hostname: false) do |http|
      http.get(uri.path).body
    end
  end

  # Stops pebble only: its directory no longer answers (an order fails).
  def stop_acme
    @processes.last.stop
  end

  def output
    @processes.map(&:output).join
  end

  def stop
    @processes.each(&:stop)
    FileUtils.remove_entry(@dir)
  end

  private

  def config(listen)
    cert = TestCertificates.ca.issue("localhost")
    path = File.join(@dir, "pebble.json")
    File.write(path, JSON.generate(
                       pebble: { listenAddress: "127.0.0.1:#{listen}", managementListenAddress: "127.0.0.1:#{@management}",
                                 certificate: cert.cert_file, privateKey: cert.key_file,
                                 httpPort: @http_port, tlsPort: @tls_port, ocspResponderURL: "",
                                 certificateValidityPeriod: @validity }
                     ))
    path
  end
end
