# frozen_string_literal: true

# The control endpoint (--control-url, --control-token) and upctl: stats as JSON in the shape
# of Puma's, per worker as it last checked in; restart, stop and the other commands as the
# signals they stand for; a wrong token refused.
require_relative "helper"
require_relative "support/cli_process"
require "json"
require "time"
require "tmpdir"
require "fileutils"

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

  def test_help_describes_each_command
    out, _err, code = upctl("-h")
    assert_equal 0, code
    %w[status stats restart phased-restart stop halt reopen-logs reload-certs].each do |command|
      assert_match(/^ +#{command} +[A-Z]\w+ \w+/, out, "#{command} is described on its line")
    end
    %w[--config --state-path --control-url --control-token --pid-file].each { |flag| assert_includes out, flag }
  end

  # A config file with the control endpoint, its token and a state file, as an app keeps it.
  def write_config(dir, token: "s3cret")
    FileUtils.mkdir_p(File.join(dir, "config"))
    File.write(File.join(dir, "config", "up.rb"), <<~RUBY)
      control_url "unix://#{dir}/ctl.sock"
      #{"control_token #{token.inspect}" if token}
      state_path "#{dir}/up.state"
    RUBY
    File.write(File.join(dir, "config.ru"), File.read(File.join(CLIProcess::ROOT, "test/rackup/hello.ru")))
  end

  def upctl_in(dir, *args)
    require "open3"
    out, err, status = Timeout.timeout(20) { Open3.capture3(RbConfig.ruby, UPCTL, *args, chdir: dir) }
    [out, err, status.exitstatus]
  end

  def test_upctl_reads_config_up_rb_or_the_file_c_names
    Dir.mktmpdir do |dir|
      write_config(dir)
      server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", chdir: dir)
      server.wait_for(/control on/)
      out, err, code = upctl_in(dir, "stats") # config/up.rb, found in the app's directory
      assert_equal 0, code, err
      assert_equal server.pid, JSON.parse(out)["pid"]
      out, err, code = upctl("-C", File.join(dir, "config", "up.rb"), "stats") # from elsewhere
      assert_equal 0, code, err
      assert_equal server.pid, JSON.parse(out)["pid"]
      out, _err, code = upctl_in(dir, "status")
      assert_equal [0, "UP! is running (pid #{server.pid})\n"], [code, out]
      _out, err, code = upctl_in(dir, "stop")
      assert_equal 0, code, err
      assert server.wait.success?
      out, _err, code = upctl_in(dir, "status")
      assert_equal [1, "UP! is not running (pid #{server.pid} is gone)\n"], [code, out]
    ensure
      server&.stop
    end
  end

  def test_status_by_the_control_endpoint_alone
    Dir.mktmpdir do |dir|
      server = start(dir, "-w", "1")
      out, _err, code = upctl("--control-url", @ctl, "-T", "s3cret", "status")
      assert_equal [0, "UP! is running (#{@ctl})\n"], [code, out]
      server.stop
      out, _err, code = upctl("--control-url", @ctl, "-T", "s3cret", "status")
      assert_equal 1, code
      assert_match(/\AUP! is not running \(#{Regexp.escape(@ctl)}: /, out)
    end
  end

  def test_without_a_place_to_look_upctl_says_what_it_needs
    Dir.mktmpdir do |dir|
      _out, err, code = upctl_in(dir, "stats")
      assert_equal 1, code
      assert_includes err, "upctl: where is the server? Give --control-url, --pid-file or --state-path"
    end
  end

  # The token the server made is in the state file (mode 0600), and the same after a hot
  # restart, so upctl, reading that file, keeps working across restarts.
  def test_a_made_token_is_in_the_state_file_and_survives_hot_restarts
    Dir.mktmpdir do |dir|
      write_config(dir, token: nil)
      server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "2", chdir: dir)
      token = server.wait_for(/control on unix:\S+ \(token (\h{32})\)/)[1]
      state = File.join(dir, "up.state")
      assert_equal 0o600, File.stat(state).mode & 0o777
      assert_equal({ "pid" => server.pid, "control_url" => "unix://#{dir}/ctl.sock", "control_token" => token,
                     "version" => Up::VERSION, "runtime" => "up_ruby" }, JSON.parse(File.read(state)))
      _out, err, code = upctl_in(dir, "restart")
      assert_equal 0, code, err
      server.wait_for(/re-executing.*control on unix:\S+ \(token (\h{32})\)/m) { |m| assert_equal token, m[1] }
      assert_equal token, JSON.parse(File.read(state))["control_token"]
      out, err, code = upctl("-S", state, "stats")
      assert_equal 0, code, err
      assert_equal server.pid, JSON.parse(out)["pid"]
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
