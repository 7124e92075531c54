# frozen_string_literal: true

# up_node's processes: -w N workers under a node:cluster primary that replaces a worker that
# dies, and INT/TERM stopping gracefully (in-flight requests finish, exit status 0).
require_relative "helper"
require_relative "support/up_node_process"

class TestUpNodeCluster < Minitest::Test
  include UpTestHelpers
  include UpNodeProcess

  def booted_pid(server, index)
    server.wait_for(/worker #{index} \(pid (\d+)\) booted/)[1].to_i
  end

  def test_a_killed_worker_is_replaced_and_serving_goes_on
    server = start_up_node("-w", "2")
    old_pid = booted_pid(server, 0)
    booted_pid(server, 1)
    Process.kill(:KILL, old_pid)
    server.wait_for(/worker 0 \(pid #{old_pid}\) exited \(signal SIGKILL\); starting a new one/)
    new_pid = server.wait_for(/exited \(signal SIGKILL\); starting a new one.*\n.*worker 0 \(pid (\d+)\) booted/)[1].to_i
    refute_equal old_pid, new_pid
    assert Process.kill(0, new_pid)
    6.times { assert_equal "hello", get("/").body }
  end

  # Process.pid is each worker's own (Opal said 0 everywhere): apps log it and key
  # per-process state by it. node:cluster hands new connections to the workers in turn.
  def test_process_pid_is_the_pid_of_the_worker_that_answers
    server = start_up_node("-w", "2", "test/rackup/pid.ru")
    workers = [booted_pid(server, 0), booted_pid(server, 1)]
    answered = Array.new(6) { get("/").body.to_i }
    assert_empty answered - workers, "pids answered: #{answered}, workers: #{workers}"
    assert_equal workers.sort, answered.uniq.sort
  end

  def test_term_stops_a_cluster_with_status_0
    server = start_up_node("-w", "2")
    booted_pid(server, 0)
    booted_pid(server, 1)
    assert_equal "hello", get("/").body
    server.signal(:TERM)
    status = server.wait
    assert_equal 0, status.exitstatus, server.output
    assert_match(/\] stopped\n/, server.output)
    assert_raises(Errno::ECONNREFUSED) { connect }
  end

  # The request is in flight (its body half sent) when TERM comes: it still gets its whole
  # response, then the process exits 0 and the port refuses new connections.
  def test_term_finishes_the_request_in_flight_and_exits_0
    server = start_up_node
    sock = connect
    sock.write("POST /echo HTTP/1.1\r\nHost: h\r\nContent-Length: 6\r\n\r\nabc")
    server.signal(:TERM)
    server.wait_for(/up_node stopping/)
    sock.write("def")
    res = read_response(sock)
    assert_equal 200, res.status
    assert_equal "abc|def|6|ASCII-8BIT", res.body
    assert_equal "close", res["connection"]
    assert_equal 0, server.wait.exitstatus, server.output
    assert_raises(Errno::ECONNREFUSED) { connect }
  end

  def test_int_stops_a_single_process_with_status_0
    server = start_up_node
    assert_equal "hello", get("/").body
    server.signal(:INT)
    assert_equal 0, server.wait.exitstatus, server.output
  end

  def test_pid_file_and_log_file_and_hup_reopens_the_log
    Dir.mktmpdir do |dir|
      pid_file = File.join(dir, "up.pid")
      log_file = File.join(dir, "up.log")
      server = start_up_node("-P", pid_file, "-l", log_file, wait: false)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 30
      listening = %r{listening on http://127\.0\.0\.1:(\d+)}
      sleep 0.05 until (File.file?(log_file) && File.read(log_file) =~ listening) ||
                       Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      @port = Regexp.last_match(1).to_i
      assert_equal server.pid, File.read(pid_file).to_i
      File.rename(log_file, "#{log_file}.1")
      server.signal(:HUP)
      sleep 0.05 until File.file?(log_file) || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      assert_equal 500, get("/fail").status
      assert_includes File.read(log_file), "kaboom from the app"
      server.signal(:TERM)
      assert_equal 0, server.wait.exitstatus
      refute File.exist?(pid_file), "pid file left behind"
    end
  end
end
