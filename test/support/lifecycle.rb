# frozen_string_literal: true

require "tmpdir"
require_relative "cli_process"
require_relative "load_generator"

# Shared by the tests of signals, restarts and supervision: exe/up_ruby on
# test/rackup/lifecycle.ru with its version and id files in a temporary directory, and every
# process a test started stopped in teardown.
module LifecycleHelpers
  APP = "test/rackup/lifecycle.ru"

  def setup
    super
    @dir = Dir.mktmpdir("up-lifecycle")
    @version_file = File.join(@dir, "version")
    @ids_file = File.join(@dir, "ids")
    File.write(@version_file, "1")
  end

  # Our sockets close first: a stopping server gives a client that keeps its end open after
  # a last response up to its lingering-close timeout (2 s) before it exits.
  def teardown
    close_sockets
    (@processes || []).each(&:stop)
    FileUtils.remove_entry(@dir) if @dir
    super
  end

  def start_up(*args, app: APP, wait: true, env: {}, command: [RbConfig.ruby, CLIProcess::EXE])
    env = { "UP_TEST_VERSION_FILE" => @version_file, "UP_TEST_IDS" => @ids_file }.merge(env)
    process = CLIProcess.new("-b", "127.0.0.1", "-p", "0", *args, app, env: env, wait: wait, command: command)
    (@processes ||= []) << process
    process
  end

  # The pids of workers 0...n once each has booted (the first time each index did).
  def booted(server, n)
    Array.new(n) { |i| server.wait_for(/worker #{i} booted \(pid (\d+)\)/)[1].to_i }
  end

  # The app version served on a new connection, and the pid that served it.
  def version_and_pid(port)
    sock = TCPSocket.new("127.0.0.1", port)
    sock.write("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    version, pid = read_response(sock).body.split
    [version, pid.to_i]
  ensure
    sock&.close
  end

  # One line per load test on stderr when UP_LOAD_FIGURES is set (for docs/signals.md).
  def report(what, result, lost)
    warn "load: #{what}: #{result}, #{lost.size} lost" if ENV["UP_LOAD_FIGURES"]
  end

  # The state letter of a process (R, S, T for stopped, Z...) from /proc.
  def process_state(pid)
    File.read("/proc/#{pid}/stat")[/\) (\w)/, 1]
  end

  def alive?(pid)
    Process.kill(0, pid)
    true
  rescue Errno::ESRCH
    false
  end

  # Sends a request for the slow path on a new connection to port and waits until the app has
  # it (its id is in the ids file); returns the socket, for the response or the cut-off.
  def slow_request_in_flight(port)
    sock = connect(port)
    sock.write("GET /?id=slow HTTP/1.1\r\nHost: h\r\n\r\n")
    wait_for_file(@ids_file, /slow/)
    sock
  end

  # Waits until the file at path matches pattern; returns the match.
  def wait_for_file(path, pattern, timeout: 20)
    limit = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    loop do
      m = File.exist?(path) && File.read(path).match(pattern)
      return m if m
      raise "timed out waiting for #{pattern.inspect} in #{path}:\n#{File.exist?(path) ? File.read(path) : "(none)"}" \
        if Process.clock_gettime(Process::CLOCK_MONOTONIC) > limit

      sleep 0.02
    end
  end
end
