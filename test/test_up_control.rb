# frozen_string_literal: true

# --control-url with exe/upctl, and --access-log, on `up` (the engine as a Node addon), as
# test_control.rb and test_access_log.rb hold them on up_ruby: stats in up_ruby's shape from a
# single process and from a -w 2 primary that asks its workers, the commands as the signals
# they stand for, a wrong token refused, a Unix socket and a TCP endpoint; the access log's
# lines in up_ruby's format, written at the stop at the latest and within about a second on a
# quiet server, and a new file after a rename and a HUP (in every worker).
require_relative "helper"
require_relative "support/up_process"
require "json"
require "open3"
require "time"
require "tmpdir"

class TestUpControl < Minitest::Test
  include UpTestHelpers
  include UpProcess

  UPCTL = File.join(CLIProcess::ROOT, "exe", "upctl")
  LINE = %r{\A(?<addr>\S+) - - \[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d \+0000\] "(?<request>[^"]*)" (?<status>\d{3}) (?<bytes>\d+) (?<secs>\d+\.\d{6})\z}

  def upctl(*args)
    out, err, status = Timeout.timeout(20) { Open3.capture3(RbConfig.ruby, UPCTL, *args) }
    [out, err, status.exitstatus]
  end

  def stats(url = @ctl, token = "s3cret")
    out, err, code = upctl("-C", url, "-T", token, "stats")
    assert_equal 0, code, err
    JSON.parse(out)
  end

  # `up` with a control endpoint on a Unix socket in dir.
  def start_controlled(dir, *args)
    @ctl = "unix://#{dir}/ctl.sock"
    start_up("--control-url", @ctl, "--control-token", "s3cret", *args)
  end

  # Waits (bounded) until the file matches pattern.
  def wait_for_file(path, pattern, timeout: 20)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    until File.file?(path) && File.read(path).match?(pattern)
      flunk "#{path} never matched #{pattern.inspect}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.05
    end
  end

  def requests_in(path)
    File.readlines(path, chomp: true).map { |l| l[LINE, :request] || flunk("not a log line: #{l.inspect}") }
  end

  # ---------------------------------------------------------------- control

  def test_single_process_stats_count_its_requests
    Dir.mktmpdir do |dir|
      server = start_controlled(dir, "test/rackup/hello.ru")
      server.wait_for(%r{control on unix://#{Regexp.escape(dir)}/ctl\.sock})
      3.times { assert_equal "Hello World", get("/").body }
      report = stats
      assert_equal server.pid, report["pid"]
      assert_equal 1, report["workers"]
      assert_equal 3, report["requests"]
      assert_equal 0, report["static_files"]
      assert_kind_of Integer, report["connections"]
      assert_kind_of Float, report["uptime"]
      assert Time.iso8601(report["started_at"]) > Time.now - 60
    end
  end

  def test_cluster_stats_gather_every_workers_figures
    Dir.mktmpdir do |dir|
      server = start_controlled(dir, "-w", "2", "test/rackup/hello.ru")
      [0, 1].each { |i| server.wait_for(/worker #{i} \(pid \d+\) booted/) }
      5.times { assert_equal "Hello World", get("/").body }
      report = stats
      assert_equal server.pid, report["pid"]
      assert_equal 2, report["workers"]
      assert_equal 2, report["booted_workers"]
      assert_kind_of Float, report["uptime"]
      assert_equal [0, 1], report["worker_status"].map { |w| w["index"] }
      pids = server.output.scan(/worker \d \(pid (\d+)\) booted/).flatten.map(&:to_i)
      assert_equal pids.sort, report["worker_status"].map { |w| w["pid"] }.sort
      report["worker_status"].each do |w|
        assert w["booted"]
        assert_equal 0, w["restarts"]
        %w[requests connections static_files].each { |k| assert_kind_of Integer, w.dig("last_status", k), k }
        assert Time.iso8601(w["last_checkin"]) > Time.now - 10
      end
      assert_equal 5, report["worker_status"].sum { |w| w.dig("last_status", "requests") },
                   "asked when stats are: every request finished so far"
    end
  end

  def test_a_killed_worker_counts_as_a_restart
    Dir.mktmpdir do |dir|
      server = start_controlled(dir, "-w", "2", "test/rackup/hello.ru")
      pid = server.wait_for(/worker 0 \(pid (\d+)\) booted/)[1].to_i
      server.wait_for(/worker 1 \(pid \d+\) booted/)
      Process.kill(:KILL, pid)
      server.wait_for(/worker 0 \(pid (?!#{pid}\))\d+\) booted/)
      worker0 = stats["worker_status"].find { |w| w["index"] == 0 }
      assert_equal 1, worker0["restarts"]
      refute_equal pid, worker0["pid"]
    end
  end

  def test_stop_through_upctl_ends_the_process_and_removes_the_socket
    Dir.mktmpdir do |dir|
      server = start_controlled(dir, "test/rackup/hello.ru")
      server.wait_for(/control on unix:/)
      out, err, code = upctl("-C", @ctl, "-T", "s3cret", "stop")
      assert_equal 0, code, err
      assert_equal({ "ok" => true, "signal" => "TERM" }, JSON.parse(out))
      assert server.wait(timeout: 15).success?
      assert_match(/up stopped/, server.output)
      refute File.exist?("#{dir}/ctl.sock"), "the control socket file is removed"
    end
  end

  def test_halt_through_upctl_stops_a_cluster
    Dir.mktmpdir do |dir|
      server = start_controlled(dir, "-w", "2", "test/rackup/hello.ru")
      [0, 1].each { |i| server.wait_for(/worker #{i} \(pid \d+\) booted/) }
      out, err, code = upctl("-C", @ctl, "-T", "s3cret", "halt")
      assert_equal 0, code, err
      assert_equal({ "ok" => true, "signal" => "QUIT" }, JSON.parse(out))
      assert server.wait(timeout: 15).success?
      refute File.exist?("#{dir}/ctl.sock")
    end
  end

  # The restarts themselves are the signal handlers' (node/up/serve.js, primary.js): this
  # holds that upctl's command reached the process as that signal, which the process logs
  # whatever it then does with it ("USR2 is not supported ...; ignored", or a restart).
  def test_restart_commands_reach_the_process_as_their_signals
    { "restart" => "USR2", "phased-restart" => "USR1" }.each do |command, signal|
      Dir.mktmpdir do |dir|
        server = start_controlled(dir, "-w", "2", "test/rackup/hello.ru")
        [0, 1].each { |i| server.wait_for(/worker #{i} \(pid \d+\) booted/) }
        refute_match(/#{signal}/, server.output)
        out, err, code = upctl("-C", @ctl, "-T", "s3cret", command)
        assert_equal 0, code, err
        assert_equal({ "ok" => true, "signal" => signal }, JSON.parse(out))
        server.wait_for(/#{signal}/)
        server.stop
      end
    end
  end

  def test_a_wrong_token_is_refused_on_a_tcp_endpoint
    server = start_up("--control-url", "tcp://127.0.0.1:0", "--control-token", "s3cret", "test/rackup/hello.ru")
    url = server.wait_for(%r{control on (tcp://127\.0\.0\.1:\d+)})[1]
    _out, err, code = upctl("-C", url, "-T", "wrong", "stats")
    assert_equal 1, code
    assert_equal({ "error" => "wrong or missing token" }, JSON.parse(err))
    _out, err, code = upctl("-C", url, "stop")
    assert_equal 1, code
    assert_includes err, "wrong or missing token"
    assert_equal "Hello World", get("/").body, "still serving"
    assert_equal 1, stats(url)["requests"]
  end

  def test_without_a_token_one_is_made_and_logged
    Dir.mktmpdir do |dir|
      ctl = "unix://#{dir}/ctl.sock"
      server = start_up("--control-url", ctl, "test/rackup/hello.ru")
      token = server.wait_for(/control on unix:\S+ \(token (\h{32})\)/)[1]
      assert_equal 1, stats(ctl, token)["workers"]
    end
  end

  # As on up_ruby: the made token is in the state file (mode 0600) and the restarted image
  # keeps it, so upctl reading that file works across a hot restart.
  def test_a_made_token_is_in_the_state_file_and_survives_hot_restarts
    Dir.mktmpdir do |dir|
      ctl = "unix://#{dir}/ctl.sock"
      state = File.join(dir, "up.state")
      server = start_up("--control-url", ctl, "--state-path", state, "test/rackup/hello.ru")
      token = server.wait_for(/control on unix:\S+ \(token (\h{32})\)/)[1]
      assert_equal 0o600, File.stat(state).mode & 0o777
      assert_equal({ "pid" => server.pid, "control_url" => ctl, "control_token" => token, "version" => Up::VERSION,
                     "runtime" => "up" }, JSON.parse(File.read(state)))
      _out, err, code = upctl("-S", state, "restart")
      assert_equal 0, code, err
      server.wait_for(/re-executing.*control on unix:\S+ \(token (\h{32})\)/m) { |m| assert_equal token, m[1] }
      assert_equal token, JSON.parse(File.read(state))["control_token"]
      assert_equal server.pid, stats(ctl, token)["pid"]
    end
  end

  def test_a_stale_socket_file_is_taken_and_a_live_one_refused
    Dir.mktmpdir do |dir|
      path = File.join(dir, "ctl.sock")
      UNIXServer.new(path).close # what a killed server leaves
      server = start_controlled(dir, "test/rackup/hello.ru")
      server.wait_for(/control on unix:/)
      assert_equal 1, stats["workers"]
      second = start_up("--control-url", @ctl, "test/rackup/hello.ru", wait: false)
      refute second.wait(timeout: 30).success?
      assert_match(/up: cannot listen for control on unix:.*a server is listening on it already/, second.output)
      assert_equal 1, stats["workers"], "the first one still answers"
    end
  end

  def test_up_node_still_refuses_them
    %w[--control-url=unix:///tmp/x.sock --access-log=/tmp/x.log].each do |flag|
      out, status = Open3.capture2e({ "XDG_CACHE_HOME" => UpProcess::CACHE }, RbConfig.ruby,
                                    File.join(CLIProcess::ROOT, "exe", "up_node"), flag, "test/rackup/hello.ru",
                                    chdir: CLIProcess::ROOT)
      assert_equal 1, status.exitstatus
      assert_includes out, "#{flag.split("=").first} is not supported by up_node yet"
    end
  end

  # ---------------------------------------------------------------- access log

  def test_each_request_is_one_line_written_at_the_stop_at_the_latest
    Dir.mktmpdir do |dir|
      path = File.join(dir, "access.log")
      server = start_up("--access-log", path)
      get("/")
      get("/calls?x=%22quoted%22")
      get("/stream")
      sock = connect
      sock.write("HEAD / HTTP/1.0\r\n\r\n")
      read_response(sock, head: true)
      server.stop
      parsed = File.readlines(path, chomp: true).map { |l| l.match(LINE) || flunk("not a log line: #{l.inspect}") }
      assert_equal ["GET / HTTP/1.1", "GET /calls?x=%22quoted%22 HTTP/1.1", "GET /stream HTTP/1.1", "HEAD / HTTP/1.0"],
                   parsed.map { |m| m[:request] }
      assert_equal %w[200 200 200 200], parsed.map { |m| m[:status] }
      assert_equal %w[5 1 21 0], parsed.map { |m| m[:bytes] }
      assert_equal ["127.0.0.1"], parsed.map { |m| m[:addr] }.uniq
    end
  end

  def test_a_quiet_server_writes_its_lines_within_about_a_second
    Dir.mktmpdir do |dir|
      path = File.join(dir, "access.log")
      start_up("--access-log", path)
      get("/fail")
      wait_for_file(path, /"GET \/fail HTTP\/1\.1" 500 /, timeout: 5)
      assert_match LINE, File.readlines(path, chomp: true).first
    end
  end

  def test_an_access_log_that_cannot_be_opened_stops_the_start
    server = start_up("--access-log", "/nonexistent/dir/access.log", wait: false)
    refute server.wait(timeout: 30).success?
    assert_match(%r{up: cannot open access log: .*/nonexistent/dir/access\.log}, server.output)
  end

  def test_reopen_logs_through_upctl_goes_on_in_a_new_file
    Dir.mktmpdir do |dir|
      path = File.join(dir, "access.log")
      server = start_controlled(dir, "--access-log", path)
      get("/before")
      File.rename(path, "#{path}.1")
      _out, err, code = upctl("-C", @ctl, "-T", "s3cret", "reopen-logs")
      assert_equal 0, code, err
      server.wait_for(/up reopened #{Regexp.escape(path)}/)
      get("/after")
      server.stop
      assert_equal ["GET /before HTTP/1.1"], requests_in("#{path}.1")
      assert_equal ["GET /after HTTP/1.1"], requests_in(path)
    end
  end

  # logrotate renames the file and sends HUP: the primary forwards it, and each worker goes
  # on in a new file under the old name.
  def test_hup_reopens_the_access_log_in_every_worker
    Dir.mktmpdir do |dir|
      path = File.join(dir, "access.log")
      server = start_up("-w", "2", "--access-log", path, "test/rackup/hello.ru")
      [0, 1].each { |i| server.wait_for(/worker #{i} \(pid \d+\) booted/) }
      get("/before")
      File.rename(path, "#{path}.1")
      server.signal(:HUP)
      [0, 1].each { |i| server.wait_for(/worker #{i} reopened #{Regexp.escape(path)}/) }
      4.times { get("/after") }
      server.signal(:TERM)
      assert server.wait(timeout: 15).success?
      assert_equal ["GET /before HTTP/1.1"], requests_in("#{path}.1")
      assert_equal ["GET /after HTTP/1.1"] * 4, requests_in(path)
    end
  end
end
