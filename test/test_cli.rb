# frozen_string_literal: true

# exe/up_ruby as a user runs it: options, clear errors, pid file, log file, graceful stop.
require_relative "helper"
require_relative "support/cli_process"
require "open3"
require "tmpdir"
require "up/options"

class TestCLI < Minitest::Test
  include UpTestHelpers

  HELLO = "examples/hello/config.ru"

  def run_cli(*args)
    proc = CLIProcess.new(*args, wait: false)
    [proc.wait(timeout: 20), proc.output]
  end

  def test_version
    status, out = run_cli("-v")
    assert status.success?
    assert_equal "UP! #{Up::VERSION}\n", out
  end

  def test_help_lists_every_option
    status, out = run_cli("--help")
    assert status.success?
    flags = Up::Options::SETTINGS.map(&:flag).grep(/\A--/)
    (flags + %w[--version --help]).each { |opt| assert_includes out, opt }
  end

  def test_bad_argument_is_a_clear_error
    status, out = run_cli("--port", "abc")
    assert_equal 1, status.exitstatus
    assert_includes out, "invalid argument: --port abc"
    status, out = run_cli("--frobnicate")
    assert_equal 1, status.exitstatus
    assert_includes out, "invalid option: --frobnicate"
    status, out = run_cli("-t", "-3", HELLO)
    assert_equal 1, status.exitstatus
    assert_includes out, "threads must be between 0 and 1024"
  end

  # Each of these once got past the CLI to Up::Server.new, which refused it and the process
  # crashed ("double free", Aborted); now the CLI refuses it first, the usual way.
  OUT_OF_RANGE = [
    # argv                                  message
    [%w[--head-timeout 100000],             "--head-timeout must be between 0 and 86400 seconds"],
    [%w[--body-timeout 0],                  "--body-timeout must be between 0 and 86400 seconds"],
    [%w[--keepalive-timeout -1],            "--keepalive-timeout must be between 0 and 86400 seconds"],
    [%w[--write-timeout 1e400],             "--write-timeout must be between 0 and 86400 seconds"],
    [%w[--shutdown-timeout 86401],          "--shutdown-timeout must be between 0 and 86400 seconds"],
    [%w[--max-head-size 100],               "--max-head-size must be between 256 and 1073741824"],
    [%w[--max-head-size 4294967296],        "--max-head-size must be between 256 and 1073741824"],
    [%w[--max-headers 0],                   "--max-headers must be between 1 and 10000"],
    [%w[--max-pipeline 4294967296],         "--max-pipeline must be between 1 and 4294967295"],
    [%w[--max-body-size 9223372036854775808], "--max-body-size must be at most 9223372036854775807"],
    [%w[--spool-threshold -1],              "--spool-threshold must not be negative"],
    [%w[-t 1025],                           "--threads must be between 0 and 1024"],
    [%w[-p 65536],                          "--port must be between 0 and 65535"]
  ].freeze

  def test_a_value_the_server_would_refuse_is_a_one_line_usage_error
    OUT_OF_RANGE.each do |argv, message|
      status, out = run_cli("-b", "127.0.0.1", "-p", "0", "-w", "1", *argv, HELLO)
      assert_equal 1, status.exitstatus, "#{argv.join(" ")}: #{out}"
      assert_equal "up_ruby: #{message}\nTry 'up_ruby --help'.\n", out
      refute_match(/double free|Aborted|\.rb:\d+/, out)
    end
  end

  def test_the_smallest_limits_and_timeouts_allowed_boot_and_serve
    server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", "-t", "0", "--max-head-size", "256",
                            "--max-headers", "1", "--max-pipeline", "1", "--head-timeout", "0.5",
                            "--body-timeout", "0.5", "--keepalive-timeout", "0.5", "--write-timeout", "0.5",
                            "--shutdown-timeout", "0.5", HELLO)
    assert_equal "Hello World\n", raw_request("GET / HTTP/1.1\r\nHost: h\r\n\r\n", port: server.port).body
    assert_equal 431, get("/", port: server.port).status # Host and Connection: two fields
    server.signal(:TERM)
    assert server.wait.success?, server.output
  ensure
    server&.stop
  end

  # up_ruby speaks h2c beside HTTP/1.1 by default; --no-http2, or `http2 false` in the config
  # file, leaves HTTP/1.1 alone.
  def test_http2_by_default_and_http_1_1_only_with_no_http2
    h2c = lambda do |port|
      out, _err, status = Open3.capture3("curl", "-sS", "--max-time", "5", "--http2-prior-knowledge",
                                         "-w", "|%{http_version}", "http://127.0.0.1:#{port}/")
      status.success? ? out : nil
    end
    server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", HELLO)
    assert_equal "Hello World\n|2", h2c.call(server.port)
    server.stop
    server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", "--no-http2", HELLO)
    assert_equal "Hello World\n", raw_request("GET / HTTP/1.1\r\nHost: h\r\n\r\n", port: server.port).body
    assert_nil h2c.call(server.port), "no h2c with --no-http2"
    server.stop
    Dir.mktmpdir do |dir|
      config = File.join(dir, "up.rb")
      File.write(config, "http2 false\n")
      server = CLIProcess.new("-C", config, "-b", "127.0.0.1", "-p", "0", "-w", "1", HELLO)
      assert_nil h2c.call(server.port), "no h2c with http2 false in the config file"
    end
  ensure
    server&.stop
  end

  def test_missing_config_ru_is_a_clear_error
    status, out = run_cli("-p", "0", "nope/config.ru")
    assert_equal 1, status.exitstatus
    assert_includes out, "nope/config.ru not found"
  end

  def test_port_in_use_is_a_clear_error
    blocker = TCPServer.new("127.0.0.1", 0)
    status, out = run_cli("-b", "127.0.0.1", "-p", blocker.addr[1].to_s, HELLO)
    assert_equal 1, status.exitstatus
    assert_includes out, "Address already in use"
  ensure
    blocker&.close
  end

  def test_serves_the_example_and_stops_on_term_with_pid_and_log_files
    Dir.mktmpdir do |dir|
      pid_file = File.join(dir, "up.pid")
      log_file = File.join(dir, "up.log")
      server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-P", pid_file, "-l", log_file, HELLO, wait: false)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 30
      sleep 0.05 until (File.exist?(log_file) && File.read(log_file) =~ /listening on http:\/\/[^:]+:(\d+)/) ||
                       Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      port = Regexp.last_match(1).to_i
      assert_equal server.pid, File.read(pid_file).to_i
      res = get("/", port: port)
      assert_equal "Hello World\n", res.body
      server.signal(:TERM)
      assert server.wait.success?
      refute File.exist?(pid_file), "pid file left behind"
      assert_includes File.read(log_file), "stopped"
    end
  end

  # A pid that no process has: a child that has exited and been reaped.
  def dead_pid
    pid = Process.spawn("true")
    Process.wait(pid)
    pid
  end

  def test_a_second_start_leaves_the_running_servers_pid_file_alone
    Dir.mktmpdir do |dir|
      pid_file = File.join(dir, "up.pid")
      first = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", "-P", pid_file, HELLO)
      assert_equal first.pid, File.read(pid_file).to_i
      # The same pid file: refused before binding anything.
      status, out = run_cli("-b", "127.0.0.1", "-p", "0", "-w", "1", "-P", pid_file, HELLO)
      assert_equal 1, status.exitstatus
      assert_includes out, "#{pid_file} names process #{first.pid}, which is running"
      assert_equal first.pid, File.read(pid_file).to_i
      # Another (stale) pid file on the busy port: the start fails before writing it.
      other = File.join(dir, "other.pid")
      stale = dead_pid
      File.write(other, "#{stale}\n")
      status, out = run_cli("-b", "127.0.0.1", "-p", first.port.to_s, "-w", "1", "-P", other, HELLO)
      assert_equal 1, status.exitstatus
      assert_includes out, "Address already in use"
      assert_equal stale, File.read(other).to_i
      assert_equal first.pid, File.read(pid_file).to_i
      first.signal(:TERM)
      assert first.wait.success?
      refute File.exist?(pid_file)
    ensure
      first&.stop
    end
  end

  def test_a_stale_pid_file_is_replaced
    Dir.mktmpdir do |dir|
      pid_file = File.join(dir, "up.pid")
      File.write(pid_file, "#{dead_pid}\n")
      server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "2", "-P", pid_file, HELLO)
      assert_equal server.pid, File.read(pid_file).to_i
      server.signal(:TERM)
      assert server.wait.success?
      refute File.exist?(pid_file)
    ensure
      server&.stop
    end
  end

  def test_sigint_finishes_in_flight_request_before_exit
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "slow.ru"), <<~RU)
        run ->(env) { $stderr.puts "app called"; $stderr.flush; sleep 1; [200, {}, ["slept"]] }
      RU
      server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-t", "2", File.join(dir, "slow.ru"))
      sock = connect(server.port)
      sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
      server.wait_for(/app called/) # the request is in the app when the signal comes
      server.signal(:INT)
      assert_equal "slept", read_response(sock).body
      assert server.wait.success?
    end
  end
end
