# frozen_string_literal: true

# The control endpoint (--control-url, --control-token) and upctl: stats as JSON in the shape
# of Puma's, per worker as it last checked in; restart, stop and the other commands as the
# signals they stand for; a wrong token refused.
require_relative "helper"
require_relative "support/cli_process"
require "json"
require "time"
require "tmpdir"

class TestControl < Minitest::Test
  include UpTestHelpers

  UPCTL = File.join(CLIProcess::ROOT, "exe", "upctl")

  def upctl(*args)
    out, err, status = run_command(RbConfig.ruby, UPCTL, *args)
    [out, err, status.exitstatus]
  end

  def run_command(*argv)
    require "open3"
    Timeout.timeout(20) { Open3.capture3(*argv) }
  end

  def start(dir, *args)
    @ctl = "unix://#{dir}/ctl.sock"
    CLIProcess.new("-b", "127.0.0.1", "-p", "0", "--control-url", @ctl, "--control-token", "s3cret", *args,
                   "test/rackup/hello.ru")
  end

  def stats
    out, err, code = upctl("-C", @ctl, "-T", "s3cret", "stats")
    assert_equal 0, code, err
    JSON.parse(out)
  end

  def test_cluster_stats_report_every_worker_as_it_checked_in
    Dir.mktmpdir do |dir|
      server = start(dir, "-w", "2", "-t", "3", "--worker-timeout", "4")
      server.wait_for(/worker 1 booted/)
      5.times { get("/", port: server.port) }
      report = nil
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
      loop do # the workers send their stats with each heartbeat (every second here)
        report = stats
        served = report["worker_status"].sum { |w| w.dig("last_status", "requests").to_i }
        break if served >= 5 || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

        sleep 0.2
      end
      assert_equal server.pid, report["pid"]
      assert_equal 2, report["workers"]
      assert_equal 2, report["booted_workers"]
      assert_kind_of Float, report["uptime"]
      assert_equal [0, 1], report["worker_status"].map { |w| w["index"] }
      report["worker_status"].each do |w|
        assert w["booted"]
        assert_equal 0, w["restarts"]
        assert_equal 3, w.dig("last_status", "threads")
        %w[requests connections backlog busy].each { |k| assert_kind_of Integer, w.dig("last_status", k), k }
        assert Time.iso8601(w["last_checkin"]) > Time.now - 10
      end
      assert_equal 5, report["worker_status"].sum { |w| w.dig("last_status", "requests") }
    ensure
      server&.stop
    end
  end

  def test_a_killed_worker_counts_as_a_restart
    Dir.mktmpdir do |dir|
      server = start(dir, "-w", "2", "--worker-timeout", "4")
      pid = server.wait_for(/worker 0 booted \(pid (\d+)\)/)[1].to_i
      server.wait_for(/worker 1 booted/)
      Process.kill(:KILL, pid)
      server.wait_for(/worker 0 booted \(pid (?!#{pid})\d+\)/)
      worker0 = stats["worker_status"].find { |w| w["index"] == 0 }
      assert_equal 1, worker0["restarts"]
      refute_equal pid, worker0["pid"]
    ensure
      server&.stop
    end
  end

  def test_single_mode_stats_and_stop
    Dir.mktmpdir do |dir|
      server = start(dir, "-w", "1")
      3.times { get("/", port: server.port) }
      report = stats
      assert_equal server.pid, report["pid"]
      assert_equal 3, report["requests"]
      out, _err, code = upctl("-C", @ctl, "-T", "s3cret", "stop")
      assert_equal 0, code
      assert_equal({ "ok" => true, "signal" => "TERM" }, JSON.parse(out))
      assert server.wait.success?
      refute File.exist?("#{dir}/ctl.sock"), "the control socket file is removed"
    end
  end

  def test_restart_through_upctl_keeps_serving
    Dir.mktmpdir do |dir|
      server = start(dir, "-w", "2")
      server.wait_for(/worker 1 booted/)
      _out, err, code = upctl("-C", @ctl, "-T", "s3cret", "restart")
      assert_equal 0, code, err
      server.wait_for(/re-executing/)
      server.wait_for(/control on .*control on /m) # the new image has its control endpoint up
      assert_equal "Hello World", get("/", port: server.port).body
      assert_equal 2, stats["workers"]
    ensure
      server&.stop
    end
  end

  def test_a_wrong_token_is_refused
    Dir.mktmpdir do |dir|
      server = start(dir, "-w", "1")
      _out, err, code = upctl("-C", @ctl, "-T", "wrong", "stats")
      assert_equal 1, code
      assert_equal({ "error" => "wrong or missing token" }, JSON.parse(err))
      _out, err, code = upctl("-C", @ctl, "stop")
      assert_equal 1, code
      assert_includes err, "wrong or missing token"
      assert_equal "Hello World", get("/", port: server.port).body, "still serving"
    ensure
      server&.stop
    end
  end

  def test_signals_by_pid_file_without_an_endpoint
    Dir.mktmpdir do |dir|
      pid_file = File.join(dir, "up.pid")
      server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", "-P", pid_file, "test/rackup/hello.ru")
      out, _err, code = upctl("-P", pid_file, "stop")
      assert_equal 0, code
      assert_equal "sent TERM to #{server.pid}\n", out
      assert server.wait.success?
      _out, err, code = upctl("-P", pid_file, "stats")
      assert_equal 1, code
      assert_includes err, "stats needs --control-url"
    end
  end
end
