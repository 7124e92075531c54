# frozen_string_literal: true

require "socket"

module Bench
  # A server under test, run as a child process in a process group of its own so that its
  # workers can be found and killed with it. Created by Bench::Runner for each server of a
  # table and by Bench::Scenario for one measurement; owns the child (and its log file) until
  # it is stopped. Every live instance is remembered, so that Bench::ServerProcess.stop_all
  # can clean up after an error or Ctrl-C.
  class ServerProcess
    class StartError < StandardError; end

    # Most servers listen within a second or two; bundler and a cold YJIT add some.
    START_TIMEOUT = 60
    # How long a server gets to stop after TERM before its whole process group gets KILL.
    STOP_TIMEOUT = 10

    @live = []
    class << self
      attr_reader :live

      # Kills every server still running (at exit, after an error or an interrupt).
      def stop_all
        stop_together(live.dup)
      end

      # Stops several servers at once, so that one slow to stop does not hold up the others:
      # TERM to each, then KILL to the process group of each that has not exited STOP_TIMEOUT
      # after the TERMs, then KILL to whatever is left in every group (orphaned workers).
      # Returns {server => :term when TERM was enough, :kill otherwise} for the servers that
      # were spawned. A server leaves the live list only once its group got the last KILL, so
      # stop_all still finds it if this is interrupted.
      def stop_together(servers)
        spawned = servers.select(&:pid)
        spawned.each(&:term)
        stuck = wait_exits(spawned)
        stuck.each(&:kill_group)
        wait_exits(stuck)
        spawned.each(&:kill_group)
        servers.each { |s| live.delete(s) }
        spawned.to_h { |s| [s, stuck.include?(s) ? :kill : :term] }
      end

      # The status of the child pid once it has exited, or nil if it still runs after seconds.
      def wait_child(pid, seconds)
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
        loop do
          _, status = Process.wait2(pid, Process::WNOHANG)
          return status if status
          return nil if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

          sleep 0.05
        end
      end

      # Ends a child that must not go on (a command cut short) and reaps it.
      def kill_child(pid, signal = :KILL)
        Process.kill(signal, pid)
        Process.wait(pid)
      rescue SystemCallError
        nil
      end

      # A port nobody listens on right now (the kernel's pick; the server binds it next).
      def free_port
        server = TCPServer.new("127.0.0.1", 0)
        server.addr[1]
      ensure
        server&.close
      end

      private

      # Waits up to STOP_TIMEOUT for the servers to exit; returns those still running.
      def wait_exits(servers)
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + STOP_TIMEOUT
        while (running = servers.select(&:alive?)).any?
          return running if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

          sleep 0.05
        end
        []
      end
    end

    # pid: the spawned process, which leads the process group of the server's processes.
    attr_reader :port, :log_path, :pid

    def initialize(argv:, env:, chdir:, port:, log_path:)
      @argv = argv
      @env = env
      @chdir = chdir
      @port = port
      @log_path = log_path
      @pid = nil
      @status = nil
    end

    # Spawns the server and polls a TCP connect to 127.0.0.1:port until it succeeds. Raises
    # StartError (with the end of the server's log) if it exits, cannot be spawned or does not
    # listen within START_TIMEOUT; the caller still calls #stop.
    def start
      log = File.open(@log_path, "w")
      log.puts "$ #{@argv.join(" ")}"
      log.flush
      @pid = Process.spawn(@env, *@argv, chdir: @chdir, pgroup: true, in: File::NULL, out: log, err: log)
      self.class.live << self
      wait_listening
    rescue SystemCallError => e
      raise StartError, "could not run #{@argv.first}: #{e.message}"
    ensure
      log&.close
    end

    def alive?
      return false unless @pid

      reap
      @status.nil?
    end

    # Stops the server: TERM to it, then KILL to its process group if it has not exited after
    # STOP_TIMEOUT, then KILL to whatever is left in the group (orphaned workers). Returns
    # :term when TERM was enough, :kill otherwise, nil when it was never spawned.
    def stop
      self.class.stop_together([self])[self]
    end

    # The steps of stopping, for ServerProcess.stop_together: TERM to the spawned process
    # while it runs, and KILL to its whole process group.
    def term
      signal(:TERM, @pid) if alive?
    end

    def kill_group
      signal(:KILL, -@pid)
    end

    # The last non-empty lines of the server's log, on one line, for a table cell.
    def log_tail(lines = 2)
      text = File.exist?(@log_path) ? File.read(@log_path, encoding: "binary") : ""
      text = text.encode("UTF-8", invalid: :replace, undef: :replace).gsub(/\e\[[\d;]*m/, "")
      text.lines.map(&:strip).reject(&:empty?).drop(1).last(lines).join(" / ")
    end

    private

    def wait_listening
      deadline = now + START_TIMEOUT
      loop do
        raise StartError, "exited (#{describe(@status)}) before listening: #{log_tail}" unless alive?
        return if connectable?
        raise StartError, "not listening on port #{@port} after #{START_TIMEOUT} s: #{log_tail}" if now > deadline

        sleep 0.05
      end
    end

    def connectable?
      Socket.tcp("127.0.0.1", @port, connect_timeout: 1).close
      true
    rescue SystemCallError, IOError
      false
    end

    def reap
      return if @status

      _, status = Process.wait2(@pid, Process::WNOHANG)
      @status = status if status
    rescue Errno::ECHILD
      @status = :gone
    end

    def signal(name, pid)
      Process.kill(name, pid)
    rescue Errno::ESRCH, Errno::EPERM
      nil
    end

    def describe(status)
      return "status unknown" unless status.is_a?(Process::Status)

      status.signaled? ? "signal #{Signal.signame(status.termsig)}" : "status #{status.exitstatus}"
    end

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
