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
end
