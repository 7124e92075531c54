# frozen_string_literal: true

require "socket"
require_relative "server"

module Up
  # The master process of -w N (N > 1). It forks N workers that each run an Up::Server on the
  # sockets the launcher opened (Up::Binder) and the app it loaded, replaces a worker that
  # dies, and on INT/TERM stops them all gracefully. It serves no request itself. Created by
  # Up::Launcher, which owns the sockets and the pid and log files.
  class Cluster
    # Back-off between respawns of workers that keep dying at boot.
    RESPAWN_DELAY = 0.5

    def initialize(options, app, server_options, log, binder)
      @options = options
      @app = app
      # The workers share each listening socket; a new connection wakes one of them, not all
      # (EPOLLEXCLUSIVE): measured against one SO_REUSEPORT socket per worker, see README.
      @server_options = server_options.merge(multiprocess: true, exclusive_accept: true)
      @log = log
      @binder = binder
      @workers = {}
      @stopping = false
    end

    def run
      @sockets = @binder.sockets
      @wake_r, @wake_w = IO.pipe
      @check_r, @check_w = IO.pipe
      trap_signals
      @options[:workers].times { |i| spawn_worker(i) }
      @log.call("UP! #{VERSION} master #{Process.pid} listening on #{@binder.urls.join(", ")} " \
                "(workers #{@options[:workers]}, threads #{@options[:threads]})")
      supervise
      @log.call("stopped")
    end

    private

    # Handlers only write a byte; the loop in #supervise does the work.
    def trap_signals
      %w[INT TERM].each do |sig|
        Signal.trap(sig) do
          @stopping = true
          wake
        end
      end
      Signal.trap("CHLD") { wake }
    end

    def wake
      @wake_w.write_nonblock(".", exception: false)
    end

    def spawn_worker(index)
      pid = fork { run_worker(index) }
      @workers[pid] = index
    end

    def run_worker(index)
      # Until this worker has traps of its own, the master's run in it: a stop asked for in
      # that window only sets @stopping here (the master's wake pipe is not this process's).
      # Keep it, and hand it to the server: a stop before Server#run is never lost.
      stop_asked = false
      %w[INT TERM].each { |sig| Signal.trap(sig) { stop_asked = true } }
      stop_asked ||= @stopping
      @wake_r.close
      @wake_w.close
      @check_w.close
      Signal.trap("CHLD", "DEFAULT")
      server = Server.new(@app, @server_options)
      server.logger = @log
      @sockets.each { |s| server.listen_fd(s.fileno) }
      %w[INT TERM].each { |sig| Signal.trap(sig) { server.stop } }
      server.stop if stop_asked
      # EOF on the check pipe means the master is gone: stop rather than serve orphaned.
      Thread.new do
        @check_r.read
        server.stop
      end
      @log.call("worker #{index} booted (pid #{Process.pid})")
      server.run
      exit!(0)
    rescue StandardError => e
      warn "worker #{index} failed: #{e.full_message(highlight: false)}"
      exit!(1)
    end

    def supervise
      until @stopping && @workers.empty?
        @wake_r.wait_readable(1)
        @wake_r.read_nonblock(4096, exception: false)
        reap
        next unless @stopping

        stop_workers
        break
      end
    end

    def reap
      loop do
        pid, status = Process.wait2(-1, Process::WNOHANG)
        break unless pid

        index = @workers.delete(pid)
        next if @stopping || index.nil?

        @log.call("worker #{index} (pid #{pid}) exited with #{status.inspect}; starting a new one")
        sleep RESPAWN_DELAY
        spawn_worker(index)
      end
    rescue Errno::ECHILD
      nil
    end

    def stop_workers
      @workers.each_key { |pid| Process.kill(:TERM, pid) rescue Errno::ESRCH } # rubocop:disable Style/RescueModifier
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + @options[:shutdown_timeout] + 5
      until @workers.empty?
        if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
          @workers.each_key { |pid| Process.kill(:KILL, pid) rescue Errno::ESRCH } # rubocop:disable Style/RescueModifier
        end
        pid = Process.wait(-1, Process::WNOHANG)
        pid ? @workers.delete(pid) : sleep(0.05)
      end
    rescue Errno::ECHILD
      @workers.clear
    end
  end
end
