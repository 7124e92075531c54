# frozen_string_literal: true

# The loop's socket work runs without the GVL, and while every app thread is in the app the
# watchdog's native thread runs it (ext/up/ruby/watchdog.c): with one app thread computing
# for two seconds, other connections are still written to at full speed, and new ones are
# accepted and answered by the engine. The same holds with --io-thread, where a native thread
# runs the loop all the time (TestLoopOnItsOwnThread, below).
require_relative "helper"
require "tmpdir"
require "fileutils"
require_relative "support/cli_process"

class TestLoopWithoutGvl < Minitest::Test
  include HTTPClient
  APP = File.expand_path("rackup/compute_and_download.ru", __dir__)
  DOWNLOAD = 64 * 1024 * 1024

  def setup
    @dir = Dir.mktmpdir
    @marker = File.join(@dir, "computing")
    @server = CLIProcess.new("-w", "1", "-t", "1", "-b", "127.0.0.1", "-p", "0", *extra_args, APP,
                             env: { "UP_TEST_MARKER" => @marker })
  end

  def teardown
    @server&.stop
    FileUtils.rm_rf(@dir)
  end

  def test_a_computing_request_does_not_stop_another_connections_download
    download = start_download
    computing = TCPSocket.new("127.0.0.1", @server.port)
    computing.write("GET /compute HTTP/1.1\r\nHost: h\r\n\r\n")
    wait_until_computing
    started = now
    received = read_download(download)
    took = now - started
    assert_equal DOWNLOAD, received
    assert_operator took, :<, 1.0, "the download waited for the computing request"
    refute computing.wait_readable(0), "the computing request answered before the download ended"
    assert_equal "computed", read_response(computing).body
  ensure
    [download, computing].each { |s| s&.close }
  end

  def test_a_computing_request_does_not_stop_accepting_new_connections
    computing = TCPSocket.new("127.0.0.1", @server.port)
    computing.write("GET /compute HTTP/1.1\r\nHost: h\r\n\r\n")
    wait_until_computing
    # A request the engine refuses on its own (no Host on HTTP/1.1) needs no app thread: it is
    # answered while the only one computes, once the connection is accepted and read.
    fresh = TCPSocket.new("127.0.0.1", @server.port)
    fresh.write("GET / HTTP/1.1\r\n\r\n")
    assert fresh.wait_readable(1.5), "the new connection was not answered while the app computed"
    assert_equal 400, read_response(fresh).status
    refute computing.wait_readable(0), "the compute ended before the new connection was answered"
    assert_equal "computed", read_response(computing).body
  ensure
    [computing, fresh].each { |s| s&.close }
  end

  private

  def extra_args
    []
  end

  def now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # A download under way: some of it read, the rest waiting in the server for the client.
  def start_download
    sock = TCPSocket.new("127.0.0.1", @server.port)
    sock.setsockopt(Socket::SOL_SOCKET, Socket::SO_RCVBUF, 64 * 1024)
    sock.write("GET /download HTTP/1.1\r\nHost: h\r\n\r\n")
    head = +""
    head << sock.readpartial(4096) until head.include?("\r\n\r\n")
    @download_start = head.split("\r\n\r\n", 2)[1].bytesize
    sock
  end

  def read_download(sock)
    received = @download_start
    buf = +""
    while received < DOWNLOAD
      break unless sock.wait_readable(5)

      received += sock.readpartial(1024 * 1024, buf).bytesize
    end
    received
  end

  def wait_until_computing
    deadline = now + 10
    sleep 0.01 until File.exist?(@marker) || now > deadline
    assert File.exist?(@marker), "the compute never began"
  end
end

class TestLoopOnItsOwnThread < TestLoopWithoutGvl
  private

  def extra_args
    ["--io-thread"]
  end
end
