# frozen_string_literal: true

require "rbconfig"

# Runs exe/up_ruby (or another command) as a child process, the way a user does, and waits for
# its "listening on" log line (never a fixed sleep) to learn the port it got.
class CLIProcess
  ROOT = File.expand_path("../..", __dir__)
  EXE = File.join(ROOT, "exe", "up_ruby")

  attr_reader :pid, :port, :output

  # env: variables for the child on top of this process's; chdir: where it runs; pass: more
  # of Process.spawn's redirections (3 => a socket, for socket activation).
  def initialize(*args, wait: true, command: [RbConfig.ruby, EXE], env: {}, chdir: ROOT, pass: {})
    @reader, writer = IO.pipe
    @pid = Process.spawn(env, *command, *args, out: writer, err: writer, chdir: chdir, **pass)
    writer.close
    @output = +"".b # bytes: a log line may hold any text, and reads arrive cut anywhere
    wait_listening if wait
  end

  # Waits for the "listening on" line (http or https); returns the port it names.
  def wait_listening(timeout: 30)
    @port = wait_for(%r{listening on https?://[^:]+:(\d+)}, timeout: timeout)[1].to_i
  end

  # Reads output until pattern matches (yielding the match) or the process exits.
  def wait_for(pattern, timeout: 30)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    loop do
      if (m = @output.match(pattern))
        yield m if block_given?
        return m
      end
      left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      raise "timed out waiting for #{pattern.inspect}; output:\n#{@output}" if left <= 0
      break unless @reader.wait_readable(left)

      chunk = @reader.read_nonblock(4096, exception: false)
      break if chunk.nil?

      @output << chunk unless chunk == :wait_readable
    end
    raise "process ended before #{pattern.inspect}; output:\n#{@output}"
  end

  # Reads the output already waiting, without blocking, so that a child kept up across many
  # tests never stalls on a full pipe between two wait_for calls.
  def read_available
    return if @reader.closed?

    loop do
      chunk = @reader.read_nonblock(65_536, exception: false)
      break if chunk.nil? || chunk == :wait_readable

      @output << chunk
    end
  end

  # Waits for exit; returns the Process::Status. Kills after timeout.
  def wait(timeout: 30)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    loop do
      _, status = Process.wait2(@pid, Process::WNOHANG)
      if status
        drain
        return status
      end
      if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        Process.kill(:KILL, @pid)
        Process.wait(@pid)
        raise "process did not exit in #{timeout}s; output:\n#{@output}"
      end
      sleep 0.05
    end
  end

  def signal(name)
    Process.kill(name, @pid)
  end

  def stop
    signal(:TERM)
    wait
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  end

  private

  def drain
    @output << @reader.read.to_s.b
    @reader.close
  end
end
