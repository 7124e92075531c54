# frozen_string_literal: true

# --access-log FILE: a line a request, common log format and then the seconds the request
# took, written in batches (at most a second late, and all of it at the stop), through any
# thread count; bytes that could break a line are escaped.
require_relative "helper"
require_relative "support/cli_process"
require "tmpdir"

class TestAccessLog < Minitest::Test
  include UpTestHelpers

  LINE = %r{\A(?<addr>\S+) - - \[\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d \+0000\] "(?<request>[^"]*)" (?<status>\d{3}) (?<bytes>\d+) (?<secs>\d+\.\d{6})\z}

  APP = lambda do |env|
    case env["PATH_INFO"]
    when "/missing" then [404, {}, ["nope"]]
    when "/slow" then sleep(0.2) && [200, {}, ["zz"]]
    when "/stream" then [200, {}, ->(s) { s.write("abc"); s.write("de"); s.close }]
    else [200, {}, ["hello"]]
    end
  end

  # Waits (bounded) until the file matches: the server's log, when -l sends it there.
  def wait_for_line(path, pattern)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 20
    until File.file?(path) && File.read(path).match?(pattern)
      flunk "#{path} never matched #{pattern.inspect}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.05
    end
  end

  def lines(path)
    File.readlines(path, chomp: true)
  end

  def test_each_request_is_one_line_written_at_the_stop_at_the_latest
    Dir.mktmpdir do |dir|
      path = File.join(dir, "access.log")
      server = start_server(APP, threads: 2, access_log: path)
      get("/")
      get("/missing?x=%22quoted%22")
      get("/slow")
      get("/stream")
      sock = connect
      sock.write("HEAD / HTTP/1.0\r\n\r\n")
      read_response(sock, head: true)
      server.stop
      parsed = lines(path).map { |l| l.match(LINE) || flunk("not a log line: #{l.inspect}") }
      assert_equal ["GET / HTTP/1.1", "GET /missing?x=%22quoted%22 HTTP/1.1", "GET /slow HTTP/1.1",
                    "GET /stream HTTP/1.1", "HEAD / HTTP/1.0"], parsed.map { |m| m[:request] }
      assert_equal %w[200 404 200 200 200], parsed.map { |m| m[:status] }
      assert_equal %w[5 4 2 5 0], parsed.map { |m| m[:bytes] }
      assert_equal ["127.0.0.1"], parsed.map { |m| m[:addr] }.uniq
      assert_operator parsed[2][:secs].to_f, :>=, 0.2, "the slow request's time"
      assert_operator parsed[0][:secs].to_f, :<, 0.2
    end
  end

  def test_a_quiet_server_writes_its_lines_within_about_a_second
    Dir.mktmpdir do |dir|
      path = File.join(dir, "access.log")
      start_server(APP, access_log: path)
      get("/")
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
      sleep 0.05 until (File.size?(path) || 0).positive? || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      assert_match LINE, lines(path).first.to_s
    end
  end

  def test_a_log_file_that_cannot_be_opened_is_an_error_at_start
    error = assert_raises(Errno::ENOENT) { Up::Server.new(APP, { access_log: "/nonexistent/dir/access.log" }) }
    assert_includes error.message, "/nonexistent/dir/access.log"
  end

  def test_reopen_writes_to_the_new_file_after_a_rename
    Dir.mktmpdir do |dir|
      path = File.join(dir, "access.log")
      server = start_server(APP, access_log: path)
      get("/before")
      server.server.stop # flushes; then a fresh server for the rotation check
      server.stop
      File.rename(path, "#{path}.1")
      server = start_server(APP, access_log: path)
      get("/one")
      File.rename(path, "#{path}.2")
      server.server.reopen_access_log
      get("/after")
      server.stop
      assert_equal ["GET /before HTTP/1.1"], lines("#{path}.1").map { |l| l[LINE, :request] }
      assert_equal ["GET /one HTTP/1.1"], lines("#{path}.2").map { |l| l[LINE, :request] }
      assert_equal ["GET /after HTTP/1.1"], lines(path).map { |l| l[LINE, :request] }
    end
  end

  # logrotate renames the file and sends HUP: the master forwards it, and each worker goes on
  # in a new file under the old name.
  def test_hup_reopens_the_access_log_in_every_worker
    Dir.mktmpdir do |dir|
      path = File.join(dir, "access.log")
      log = File.join(dir, "up.log")
      server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "2", "-l", log, "--access-log", path,
                              "test/rackup/hello.ru", wait: false)
      wait_for_line(log, /worker 1 booted/)
      port = File.read(log)[%r{listening on http://127\.0\.0\.1:(\d+)}, 1].to_i
      get("/before", port: port)
      File.rename(path, "#{path}.1")
      server.signal(:HUP)
      wait_for_line(log, /worker \d reopened.*worker \d reopened/m)
      4.times { get("/after", port: port) }
      server.signal(:TERM)
      assert server.wait.success?
      assert_equal ["GET /before HTTP/1.1"], lines("#{path}.1").map { |l| l[LINE, :request] }
      assert_equal ["GET /after HTTP/1.1"] * 4, lines(path).map { |l| l[LINE, :request] }
    ensure
      server&.stop
    end
  end
end
