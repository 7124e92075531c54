# frozen_string_literal: true

# exe/up_ruby as a user runs it: options, clear errors, pid file, log file, graceful stop.
require_relative "helper"
require_relative "support/cli_process"
require "tmpdir"

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
    %w[--port --bind --workers --threads --secure --ca-file --cert-file --key-file --log-file
       --pid-file --version --help --max-head-size --max-headers --max-body-size --head-timeout
       --keepalive-timeout --max-pipeline].each { |opt| assert_includes out, opt }
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
