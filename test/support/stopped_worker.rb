# frozen_string_literal: true

# Steers new connections away from one worker of a cluster, for tests that need a connection
# on each worker. Idle workers wait on the shared listening socket with an exclusive wake-up
# (EPOLLEXCLUSIVE, lib/up/runner.rb), and the kernel wakes the first of them that is waiting:
# an idle cluster gives every new connection to the same worker. While a worker is stopped
# (SIGSTOP) none of its threads waits there, so another worker takes the connections.
module StoppedWorker
  # Runs the block with the worker pid stopped, every thread of it (not only the first), and
  # lets the worker go on after, whatever the block did.
  def with_worker_stopped(pid, timeout: 5)
    Process.kill(:STOP, pid)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    until all_threads_stopped?(pid)
      raise "worker #{pid} did not stop in #{timeout} s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.005
    end
    yield
  ensure
    Process.kill(:CONT, pid)
  end

  private

  def all_threads_stopped?(pid)
    Dir.glob("/proc/#{pid}/task/*/stat").all? { |stat| File.read(stat)[/\) (\S)/, 1] == "T" }
  rescue Errno::ENOENT
    false
  end
end
