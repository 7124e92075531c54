# frozen_string_literal: true

# -l FILE: everything the server logs goes to the file (its own lines, app errors, invalid
# responses, rack.errors, a worker's boot failure), one line per message plus a backtrace
# where there is one, and HUP reopens it in the master and every worker (logrotate).
require_relative "helper"
require_relative "support/lifecycle"

class TestLogs < Minitest::Test
  include UpTestHelpers
  include LifecycleHelpers

  APP = "test/rackup/logging.ru"

  def start_logging(*args, app: APP)
    @log = File.join(@dir, "up.log")
    server = start_up("-l", @log, *args, app: app, wait: false)
    @port = wait_for_file(@log, /listening on http:\/\/[^:]+:(\d+)/)[1].to_i
    server
  end

  def test_rack_errors_app_errors_and_invalid_responses_go_to_the_log_file
    server = start_logging("-w", "1")
    assert_equal "written", get("/errors").body
    assert_equal 500, get("/raise").status
    assert_equal 500, get("/invalid").status
    wait_for_file(@log, /invalid response/)
    log = File.read(@log)
    assert_includes log, "rack.errors line from #{server.pid}\n"
    assert_match(%r{\] error in GET /raise: .*logging.ru:\d+:in .*boom from the app \(RuntimeError\)\n}, log)
    refute_match(/\n\n/, log, "a blank line in the log")
    assert_match(%r{\] invalid response from the app to GET /invalid: invalid response status 99}, log)
    refute_match(%r{lib/up/server\.rb}, log, "an app's mistake blamed on UP!")
    refute_match(/rack.errors line|boom/, server.output, "logged to stderr, not the file")
  end

  def test_a_workers_boot_failure_goes_to_the_log_file
    File.write(File.join(@dir, "broken.ru"), "raise 'boom at boot'\n")
    server = start_logging("-w", "2", "--no-preload", app: File.join(@dir, "broken.ru"))
    wait_for_file(@log, /worker 0 \(pid \d+\) failed: .*boom at boot/)
    wait_for_file(@log, /worker 0 \(pid \d+\) failed to boot/)
    refute_match(/boom/, server.output)
  end

  def test_hup_reopens_the_log_file_in_the_master_and_every_worker
    server = start_logging("-w", "2")
    booted = wait_for_file(@log, /worker 1 booted/)
    assert booted
    File.rename(@log, "#{@log}.1")
    server.signal(:HUP)
    wait_for_file(@log, /HUP: reopened/)
    wait_for_file(@log, /worker 0 reopened/)
    wait_for_file(@log, /worker 1 reopened/)
    4.times { get("/errors") }
    close_sockets
    server.signal(:TERM)
    assert server.wait.success?
    log = File.read(@log)
    assert_equal 4, log.scan("rack.errors line").size
    assert_match(/stopped\n\z/, log)
    refute_match(/rack.errors line|stopped/, File.read("#{@log}.1"))
  end
end
