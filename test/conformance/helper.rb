# frozen_string_literal: true

# Shared by the conformance suite: the same tests, over real sockets, against whichever
# runtime UP_RUNTIME names (runtimes.rb; up_ruby when unset). Each test class serves one app
# of test/conformance/apps/ through the runtime's own command, as a user starts it, once for
# all its tests; a test that needs other options starts its own server. Tests listed for the
# runtime in known_gaps.rb must still fail (ConformanceTest#run).
require "minitest/autorun"
require "fileutils"
require "tmpdir"
require_relative "../support/cli_process"
require_relative "../support/http_client"
require_relative "../support/test_timeout"
require_relative "runtimes"
require_relative "known_gaps"

Minitest::Test.prepend(UpTestTimeout)

module Conformance
  RUNTIME = ENV.fetch("UP_RUNTIME", "up_ruby")
  COMMAND = File.join(ROOT, RUNTIMES.fetch(RUNTIME) { abort "UP_RUNTIME=#{RUNTIME}: not one of #{RUNTIMES.keys.join(", ")}" })
  APPS = File.join(__dir__, "apps")
  # up_node compiles each app once into this run's own cache (XDG_CACHE_HOME), so the suite
  # never reuses a bundle from an older checkout.
  CACHE = Dir.mktmpdir("up-conformance-cache")
  Minitest.after_run { FileUtils.rm_rf(CACHE) }

  # Known gaps that failed as expected, "Class#test" => reason, for the summary at exit.
  EXPECTED_FAILURES = {}
  Minitest.after_run do
    next if EXPECTED_FAILURES.empty?

    puts "\n#{RUNTIME}: known gaps that failed as expected (test/conformance/known_gaps.rb): #{EXPECTED_FAILURES.size}"
    EXPECTED_FAILURES.sort.each { |test, reason| puts "  #{test}: #{reason}" }
  end

  # Starts the runtime's command on a free loopback port with one worker (so a counter in the
  # app sees every request; args may ask for more) and waits for its "listening on" line.
  # app: a file name in APPS; env: more variables for it.
  def self.start(app, *args, env: {})
    CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", *args, File.join(APPS, app),
                   command: [COMMAND], env: { "XDG_CACHE_HOME" => CACHE }.merge(env))
  end

  # Runs the runtime's command to its end; returns [Process::Status, output].
  def self.run_command(*args)
    process = CLIProcess.new(*args, wait: false, command: [COMMAND], env: { "XDG_CACHE_HOME" => CACHE })
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

  # apps/responses.ru's count of closed bodies.
  def closed_count
    Integer(get("/closed").body)
  end

  # Waits (5 s at most) for apps/responses.ru's count of closed bodies to reach count. A server
  # closes a body after sending its response, so the client may see the response first.
  def assert_closed_count_reaches(count)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
    seen = closed_count until seen == count || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    assert_equal count, seen, "bodies closed"
  end

  # A known gap of this runtime must fail: its failures become a pass noted at exit, and a pass
  # becomes a failure that says to remove the entry.
  def run
    reason = Conformance::KNOWN_GAPS.fetch(runtime, {})["#{self.class}##{name}"]
    return super unless reason

    super
    real = failures.reject { |f| f.is_a?(Minitest::Skip) }
    if real.empty?
      failures << Minitest::Assertion.new("#{self.class}##{name} passes on #{runtime}: remove it from " \
                                          "test/conformance/known_gaps.rb (#{reason})")
    else
      failures.clear
      Conformance::EXPECTED_FAILURES["#{self.class}##{name}"] = reason
    end
    Minitest::Result.from(self) # again: super's result was taken before the lines above
  end
end
