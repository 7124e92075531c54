# frozen_string_literal: true

# -w N: a master forks N workers on one set of listening sockets, replaces a worker that is
# killed, and stops them all on TERM.
require_relative "helper"
require_relative "support/cli_process"

class TestCluster < Minitest::Test
  include UpTestHelpers

  PID_APP = "test/rackup/pid.ru"

  def test_killed_worker_is_replaced_and_serving_goes_on
    server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "2", "-t", "1", PID_APP)
    pids = 2.times.map { |i| server.wait_for(/worker #{i} booted \(pid (\d+)\)/)[1].to_i }
    assert_equal 2, pids.uniq.size
    Process.kill(:KILL, pids.first)
    server.wait_for(/worker 0 \(pid #{pids.first}\) exited/)
    new_pid = server.wait_for(/worker 0 booted \(pid (?!#{pids.first})(\d+)\)/)[1].to_i
    refute_equal pids.first, new_pid
    served = Array.new(20) { get("/", port: server.port).body.to_i }
    assert served.all? { |pid| [new_pid, pids.last].include?(pid) }, "served by #{served.uniq}"
    Process.kill(:TERM, server.pid)
    assert server.wait.success?
    [new_pid, pids.last].each do |pid|
      assert_raises(Errno::ESRCH) { Process.kill(0, pid) }
    end
  ensure
    server&.stop
  end

  def test_workers_report_multiprocess
    server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "2", "-t", "0", "test/rackup/multiprocess.ru")
    assert_equal "true", get("/", port: server.port).body
  ensure
    server&.stop
  end

  # A worker runs the master's INT/TERM traps from its fork until it has its own; a stop in
  # that window only sets the master's flag, in the worker. The worker must stop on it rather
  # than serve on with no one to stop it. This runs the worker's start as the fork does, with
  # the flag already set, as that trap would leave it.
  def test_stop_that_reaches_a_worker_before_its_traps_is_kept
    require "up/cluster"
    log = Up::Log.new(StringIO.new)
    cluster = Up::Cluster.new({ workers: 1, threads: 1, shutdown_timeout: 5 }, ->(_) { [200, {}, []] },
                              { threads: 1, shutdown_timeout: 5 }, log, nil)
    listener = TCPServer.new("127.0.0.1", 0)
    wake_r, wake_w = IO.pipe
    check_r, check_w = IO.pipe
    { sockets: [listener], wake_r: wake_r, wake_w: wake_w, check_r: check_r, check_w: check_w, stopping: true }
      .each { |name, value| cluster.instance_variable_set(:"@#{name}", value) }
    pid = fork { cluster.send(:run_worker, 0) }
    check_r.close
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
    status = nil
    until (status = Process.wait2(pid, Process::WNOHANG)&.last) || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.05
    end
    assert status, "the worker went on serving after the stop"
    assert status.success?
  ensure
    if pid && status.nil?
      Process.kill(:KILL, pid)
      Process.wait(pid)
    end
    [listener, wake_r, wake_w, check_w].each { |io| io&.close unless io&.closed? }
  end
end
