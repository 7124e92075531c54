# frozen_string_literal: true

# Whatever the app's response raises while the binding walks it (a to_path the binding cannot
# use, a respond_to? that raises) is an app error like any other: logged, answered with a 500,
# and the worker goes on serving, inline and with one app thread. Nothing raised in Ruby may
# cross into the engine (docs/architecture.md, "Rules").
#
# The server runs as exe/up_ruby in a child process (-w 1: one process, no master), so a worker
# that dies of the bug fails the test instead of taking the test process with it.
require_relative "helper"
require_relative "support/cli_process"
require_relative "support/deadline_reads"

class TestBindingErrors < Minitest::Test
  include UpTestHelpers
  include DeadlineReads

  APP = "test/rackup/broken_bodies.ru"

  def start_cli(threads)
    @cli = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", "-t", threads.to_s,
                          "--shutdown-timeout", "2", APP)
    @port = @cli.port
  end

  def teardown
    super
    @cli&.stop
  end

  def ask(path, what)
    sock = connect
    sock.write("GET #{path} HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    read_response_within(sock, 5, what)
  rescue Errno::ECONNREFUSED, Errno::ECONNRESET, EOFError => e
    flunk "#{what}: #{e.class} (the server is gone); its output:\n#{@cli.output}"
  end

  # The broken response is a 500 with the error logged, and a request on a new connection
  # after it is answered.
  def assert_500_logged_and_served_on(threads, path)
    start_cli(threads)
    res = ask(path, "the response to #{path} (-t #{threads})")
    refute_nil res, "-t #{threads}: the server closed the connection without an answer to #{path}; " \
                    "its output:\n#{@cli.output}"
    assert_equal 500, res.status, "-t #{threads}: #{path}"
    after = ask("/", "the next request after #{path} (-t #{threads})")
    refute_nil after, "-t #{threads}: the server closed the next connection without an answer"
    assert_equal 200, after.status
    assert_equal "still serving", after.body
    @cli.wait_for(%r{error in GET #{Regexp.escape(path)}}, timeout: 5)
  end

  def test_to_path_with_nul_byte_is_a_logged_500_and_the_worker_goes_on_inline
    assert_500_logged_and_served_on(0, "/nul_path")
  end

  def test_to_path_with_nul_byte_is_a_logged_500_and_the_app_thread_goes_on
    assert_500_logged_and_served_on(1, "/nul_path")
  end

  def test_body_whose_respond_to_raises_is_a_logged_500_and_the_worker_goes_on_inline
    assert_500_logged_and_served_on(0, "/respond_to")
  end

  def test_body_whose_respond_to_raises_is_a_logged_500_and_the_app_thread_goes_on
    assert_500_logged_and_served_on(1, "/respond_to")
  end
end
