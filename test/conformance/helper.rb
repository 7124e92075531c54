# frozen_string_literal: true

# Shared by the conformance suite: the same tests, over real sockets, against whichever
# runtime UP_RUNTIME names (runtimes.rb; up_ruby when unset). Each test class serves one app
# of test/conformance/apps/ through the runtime's own command, as a user starts it, once for
# all its tests; a test that needs other options starts its own server. Tests listed for the
# runtime in known_gaps.rb must still fail (ConformanceTest#run).
#
# With UP_TLS=1 the same tests run over TLS: every server is started with -s and a certificate
# of the tests' throw-away CA (test/support/test_certificates.rb, made at run time), and every
# client (#connect, #open_ws) speaks TLS and verifies that certificate. Over TLS the gaps are
# KNOWN_GAPS and KNOWN_GAPS_OVER_TLS together.
#
# With UP_H2=1 the tests speak HTTP/2 to the same servers (h2c by prior knowledge, or h2 by
# ALPN with UP_TLS=1): #connect gives a test/support/h2_request_socket.rb, to which a test
# writes its requests as HTTP/1.1 bytes and from which #read_response gives each stream's
# response, so the tests of HTTP semantics run as they are over either protocol. The tests
# that are HTTP/1 by nature are HTTP1_ONLY (known_gaps.rb) and the files H2_NOT_RUN
# (runtimes.rb), each with its reason; over HTTP/2 the gaps are KNOWN_GAPS_OVER_H2 alone.
require "minitest/autorun"
require "fileutils"
require "tmpdir"
require_relative "../support/cli_process"
require_relative "../support/h2_request_socket"
require_relative "../support/http_client"
require_relative "../support/test_certificates"
require_relative "../support/test_timeout"
require_relative "../support/tls_client_socket"
require_relative "../support/ws_client"
require_relative "runtimes"
require_relative "known_gaps"

Minitest::Test.prepend(UpTestTimeout)

module Conformance
  RUNTIME = ENV.fetch("UP_RUNTIME", "up_ruby")
  COMMAND = File.join(ROOT, RUNTIMES.fetch(RUNTIME) { abort "UP_RUNTIME=#{RUNTIME}: not one of #{RUNTIMES.keys.join(", ")}" })
  APPS = File.join(__dir__, "apps")
  TLS = ENV["UP_TLS"] == "1"
  abort "UP_TLS=1: #{RUNTIME} has no TLS (runtimes.rb: #{TLS_NOT_BUILT[RUNTIME]})" if TLS && TLS_NOT_BUILT.key?(RUNTIME)
  H2 = ENV["UP_H2"] == "1"
  # The run's name in the summaries: the runtime, and how it is spoken to.
  HERE = "#{RUNTIME}#{" over TLS" if TLS}#{" over HTTP/2" if H2}"
  # up_node compiles each app once into this run's own cache (XDG_CACHE_HOME), so the suite
  # never reuses a bundle from an older checkout.
  CACHE = Dir.mktmpdir("up-conformance-cache")
  Minitest.after_run { FileUtils.rm_rf(CACHE) }

  # Known gaps that failed as expected, and tests not run here (NOT_RUN_OVER_TLS,
  # HTTP1_ONLY), "Class#test" => reason, for the summary at exit.
  EXPECTED_FAILURES = {}
  NOT_RUN = {}
  Minitest.after_run do
    unless EXPECTED_FAILURES.empty?
      puts "\n#{HERE}: known gaps that failed as expected (test/conformance/known_gaps.rb): #{EXPECTED_FAILURES.size}"
      EXPECTED_FAILURES.sort.each { |test, reason| puts "  #{test}: #{reason}" }
    end
    unless NOT_RUN.empty?
      puts "\n#{HERE}: tests not run (test/conformance/known_gaps.rb, NOT_RUN_OVER_TLS, HTTP1_ONLY): #{NOT_RUN.size}"
      NOT_RUN.sort.each { |test, reason| puts "  #{test}: #{reason}" }
    end
  end

  # Starts the runtime's command on a free loopback port with one worker (so a counter in the
  # app sees every request; args may ask for more) and waits for its "listening on" line.
  # app: a file name in APPS; env: more variables for it.
  def self.start(app, *args, env: {})
    CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", *tls_args, *args, File.join(APPS, app),
                   command: [COMMAND], env: { "XDG_CACHE_HOME" => CACHE }.merge(env))
  end

  # What makes a server serve HTTPS with the run's certificate (one for the whole run, for
  # localhost and 127.0.0.1), or nothing without UP_TLS=1.
  def self.tls_args
    return [] unless TLS

    @certificate ||= TestCertificates.ca.issue("localhost")
    ["-s", "-c", @certificate.cert_file, "-k", @certificate.key_file]
  end

  # The clients' context over TLS: verify the server against the tests' CA; nil without TLS.
  def self.client_context
    TestCertificates.ca.client_context if TLS
  end

  # The gaps of this run: the runtime's KNOWN_GAPS, and over TLS its KNOWN_GAPS_OVER_TLS too;
  # over HTTP/2 its KNOWN_GAPS_OVER_H2 alone (and "RUNTIME over TLS" there over TLS).
  def self.known_gaps
    if H2
      gaps = KNOWN_GAPS_OVER_H2.fetch(RUNTIME, {})
      return TLS ? gaps.merge(KNOWN_GAPS_OVER_H2.fetch("#{RUNTIME} over TLS", {})) : gaps
    end
    gaps = KNOWN_GAPS.fetch(RUNTIME, {})
    TLS ? gaps.merge(KNOWN_GAPS_OVER_TLS.fetch(RUNTIME, {})) : gaps
  end

  # Why test ("Class#name") is not run here, or nil.
  def self.not_run(test)
    (TLS && NOT_RUN_OVER_TLS.fetch(RUNTIME, {})[test]) || (H2 && HTTP1_ONLY[test] && "HTTP/1 only: #{HTTP1_ONLY[test]}")
  end

  # Runs the runtime's command to its end (in chdir); returns [Process::Status, output].
  def self.run_command(*args, chdir: ROOT, env: {})
    process = CLIProcess.new(*args, wait: false, command: [COMMAND], env: { "XDG_CACHE_HOME" => CACHE }.merge(env),
                                    chdir: chdir)
    [process.wait(timeout: 30), process.output]
  end
end

# The base of every conformance test class.
class ConformanceTest < Minitest::Test
  include HTTPClient

  # Long enough for up_node's first compile of an app, short enough that a gap which hangs
  # costs little.
  TIME_LIMIT = 20

  class << self
    # Declares the app (a file in apps/) and options of the class's shared server.
    def serve(app, *args)
      @app = app
      @args = args
    end

    def serves?
      !@app.nil?
    end

    # The class's server, started by the first test that asks for it.
    def server
      @server ||= Conformance.start(@app, *@args)
    end

    # The class's server if it is up, else nil.
    def started_server
      @server
    end

    # Runs the class's tests, then stops its server, so one server at a time is up.
    def run(reporter, options = {})
      super
    ensure
      @server&.stop
      @server = nil
    end
  end

  def time_limit_seconds
    TIME_LIMIT
  end

  def runtime
    Conformance::RUNTIME
  end

  # A connection to port, over TLS with UP_TLS=1 (its certificate verified for localhost),
  # an H2RequestSocket with UP_H2=1; closed in teardown. HTTPClient's helpers send through it.
  def connect(port = @port)
    if Conformance::H2
      h2 = H2RequestSocket.new(port, context: Conformance.client_context)
      (@sockets ||= []) << h2
      return h2
    end
    return super unless Conformance::TLS

    ssl = TLSClientSocket.open(port, Conformance.client_context)
    (@sockets ||= []) << ssl
    ssl
  end

  # Over HTTP/2: the next response to a request written to sock, as over HTTP/1.1 (head: true
  # has no use there: a HEAD's response has no DATA, and any that came is in its body).
  def read_response(sock, head: false)
    sock.is_a?(H2RequestSocket) ? sock.read_response : super
  end

  # Over HTTP/2: true when the server ended the connection (GOAWAY, or a close) within
  # timeout seconds.
  # Over TLS: true when the server ended the connection within timeout seconds, with its
  # close_notify (RFC 8446 §6.1) or a reset, before any more data. Records without data (TLS
  # 1.3 session tickets) are read past; an end without close_notify raises (a truncation).
  def closed_by_server?(sock, timeout: 5)
    return sock.ended_by_server?(timeout: timeout) if sock.is_a?(H2RequestSocket)
    return super unless sock.is_a?(TLSClientSocket)

    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    loop do
      got = sock.read_nonblock(1, exception: false)
      return got.nil? unless got == :wait_readable

      left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      return false unless left.positive? && sock.wait_readable(left)
    end
  rescue Errno::ECONNRESET
    true
  end

  # A WebSocket to port (ws://, or wss:// with UP_TLS=1); WSClient.open's options.
  def open_websocket(port = @port, **options)
    WSClient.open(port, tls: Conformance.client_context, **options)
  end

  # Whether this run speaks HTTP/2 (UP_H2=1): the few assertions about HTTP/1.1's own wire (a
  # reason phrase, chunked framing, the close that follows a refusal) take their HTTP/2 form.
  def http2?
    Conformance::H2
  end

  # The scheme and default port of the run's servers.
  def scheme
    Conformance::TLS ? "https" : "http"
  end

  def default_port
    Conformance::TLS ? "443" : "80"
  end

  # The class's shared server (its port becomes the default of HTTPClient's helpers).
  def server
    server = self.class.server
    @port = server.port
    server
  end

  def setup
    server if self.class.serves?
    super
  end

  # A server of this test's own, for options the shared one lacks; stopped in teardown.
  def start_own_server(app, *args, env: {})
    own = Conformance.start(app, *args, env: env)
    (@own_servers ||= []) << own
    @port = own.port
    own
  end

  def teardown
    close_sockets
    (@own_servers || []).each(&:stop)
    self.class.started_server&.read_available
    super
  end

  # This test's own name for what it causes in a shared server, unique in the run: a test
  # waits for events of its own tag only, since an earlier test's connection may still cause
  # one (an on_close, a body's close) after that test has gone.
  def own_tag
    @own_tag ||= "#{name}-#{rand(1 << 30)}"
  end

  # headers with this test's x-test-tag, under which apps/responses.ru and apps/sendfile.ru
  # count its closed bodies.
  def tagged(headers = {})
    headers.merge("x-test-tag" => own_tag)
  end

  # apps/responses.ru's (or sendfile.ru's) count of the closed bodies of this test's tagged
  # requests.
  def closed_count
    Integer(get("/closed", headers: tagged).body)
  end

  # Waits (5 s at most) for the count of this test's closed bodies to reach count. A server
  # closes a body after sending its response, so the client may see the response first.
  def assert_closed_count_reaches(count)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
    seen = closed_count until seen == count || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    assert_equal count, seen, "bodies closed"
  end

  # A known gap of this runtime must fail: its failures become a pass noted at exit, and a pass
  # becomes a failure that says to remove the entry.
  def run
    not_run = Conformance.not_run("#{self.class}##{name}")
    return not_run_here(not_run) if not_run

    reason = Conformance.known_gaps["#{self.class}##{name}"]
    return super unless reason

    super
    real = failures.reject { |f| f.is_a?(Minitest::Skip) }
    if real.empty?
      failures << Minitest::Assertion.new("#{self.class}##{name} passes on #{Conformance::HERE}: " \
                                          "remove it from test/conformance/known_gaps.rb (#{reason})")
    else
      failures.clear
      Conformance::EXPECTED_FAILURES["#{self.class}##{name}"] = reason
    end
    Minitest::Result.from(self) # again: super's result was taken before the lines above
  end

  # A test of NOT_RUN_OVER_TLS or HTTP1_ONLY: reported as a skip that names the list, and at exit.
  def not_run_here(reason)
    Conformance::NOT_RUN["#{self.class}##{name}"] = reason
    self.time = 0
    failures << Minitest::Skip.new("not run on #{Conformance::HERE} (test/conformance/known_gaps.rb): #{reason}")
    Minitest::Result.from(self)
  end
end
