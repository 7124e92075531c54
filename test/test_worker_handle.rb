# frozen_string_literal: true

# The master's handle on a worker (Up::Cluster::WorkerHandle): how it tells a worker that
# booted from one that failed to boot, whether or not the master's loop read the worker's
# pipe before the worker died. A real forked process writes the pipe and dies.
require_relative "helper"
require "up/cluster"

class TestWorkerHandle < Minitest::Test
  # A worker that wrote its "booted" line and was killed before the master's loop read it
  # (reaped in the same wake-up) did boot: it is replaced, not counted as a failed boot.
  def test_a_worker_reaped_before_its_booted_line_was_read_has_booted
    handle = dead_worker("booted\n{\"requests\":3}\n")
    handle.drain(now)
    assert handle.booted?
    assert_equal({ requests: 3 }, handle.last_status)
    assert_nil handle.pipe
  end

  def test_a_worker_that_died_before_its_booted_line_has_not_booted
    handle = dead_worker("{}\nboot")
    handle.drain(now)
    refute handle.booted?
    assert_nil handle.pipe
  end

  def test_a_booted_line_read_by_the_loop_counts_once
    handle = dead_worker("booted\n")
    assert handle.read(now), "it just booted"
    handle.drain(now)
    assert handle.booted?
    assert_nil handle.pipe
  end

  private

  # A handle on a forked process that wrote bytes to its pipe and died (reaped here).
  def dead_worker(bytes)
    reader, writer = IO.pipe
    pid = fork do
      reader.close
      writer.write(bytes)
      Process.kill(:KILL, Process.pid)
    end
    writer.close
    Process.wait(pid)
    Up::Cluster::WorkerHandle.new(index: 0, pid: pid, phase: 0, pipe: reader)
  end

  def now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end
end
