# frozen_string_literal: true

# One process (-w 1): every signal with a meaning does its thing and none kills the process by
# accident. HUP reopens the log and leaves a request in flight alone; QUIT stops at once;
# TTIN/TTOU are ignored; INT/TERM stop gracefully (test_cli.rb); USR1/USR2 restart in place
# (test_restart.rb).
require_relative "helper"
require_relative "support/lifecycle"
require_relative "support/deadline_reads"

class TestSingle < Minitest::Test
  include UpTestHelpers
  include LifecycleHelpers
  include DeadlineReads

  def test_hup_reopens_the_log_and_leaves_a_request_in_flight_alone
    log = File.join(@dir, "up.log")
    server = start_up("-w", "1", "-l", log, wait: false, env: { "UP_TEST_DELAY" => "0.5" })
    port = wait_for_file(log, /listening on http:\/\/[^:]+:(\d+)/)[1].to_i
    sock = slow_request_in_flight(port)
    File.rename(log, "#{log}.1")
    server.signal(:HUP)
    wait_for_file(log, /HUP: reopened #{Regexp.escape(log)}/)
    assert_equal "1 #{server.pid}", read_response(sock).body
    close_sockets
    server.signal(:TERM)
    assert server.wait.success?
    assert_match(/stopped/, File.read(log))
    refute_match(/stopped/, File.read("#{log}.1"))
  end

  def test_hup_without_a_log_file_is_logged_not_fatal
    server = start_up("-w", "1")
    server.signal(:HUP)
    server.wait_for(/HUP: no log file to reopen/)
    assert_equal "1", version_and_pid(server.port).first
  end

  def test_quit_stops_at_once_cutting_off_the_request_in_flight
    server = start_up("-w", "1", "--shutdown-timeout", "60", env: { "UP_TEST_DELAY" => "30" })
    sock = slow_request_in_flight(server.port)
    server.signal(:QUIT)
    assert server.wait(timeout: 10).success?
    assert_match(/QUIT: stopping at once/, server.output)
    raw = "".b
    assert read_until_eof(sock, raw, 5), "the request in flight was left open"
    assert_match(%r{\AHTTP/1\.1 503 }, raw, "the request cut off is answered 503 when nothing was sent")
  end

  def test_ttin_and_ttou_are_ignored_and_do_not_stop_the_process
    server = start_up("-w", "1")
    server.signal(:TTIN)
    server.wait_for(/TTIN: one process/)
    server.signal(:TTOU)
    server.wait_for(/TTOU: one process/)
    refute_equal "T", process_state(server.pid)
    assert_equal "1", version_and_pid(server.port).first
  end

  def test_process_title
    server = start_up("-w", "1")
    app = File.basename(File.dirname(File.expand_path(APP, CLIProcess::ROOT)))
    assert_equal "up_ruby #{Up::VERSION} [#{app}] tcp://127.0.0.1:#{server.port}", File.read("/proc/#{server.pid}/cmdline").delete("\0")
  end
end
