# frozen_string_literal: true

require_relative "runner"

module Up
  # One process, no master (-w 0 or 1, and rackup): it loads the app and serves it on the
  # main thread. Created by Up::Launcher; owns its Up::Server and a control thread that acts
  # on signals (the traps only write a byte to its pipe):
  #
  #   INT, TERM    graceful stop: no new connections, in-flight requests finish within
  #                --shutdown-timeout; with --stop-delay, /ready turns 503 at once and
  #                requests are served for that long first (a second INT or TERM cuts it short)
  #   QUIT         immediate stop: requests in flight are cut off now
  #   USR2, USR1   restart in place: drain like TERM, then the launcher re-executes this
  #                process (same pid) on the same listening sockets and loads the app again;
  #                connections that come meanwhile wait in the backlog, none is refused
  #   HUP          reopen the log file and the access log; load the certificates again
  #   TTIN, TTOU   logged and ignored (there are no workers to add or remove)
  #
  # With --acme-domain, its Up::Acme::Renewer posts ACME to the pipe after each new
  # certificate, which is loaded as HUP loads them.
  class Single < Runner
    SIGNALS = %w[INT TERM QUIT HUP USR1 USR2 TTIN TTOU].freeze

    def run
      signals = SignalPipe.new.trap(*SIGNALS) # first: a signal while the app loads waits
      start_redis
      @server = new_server(@load_app.call, multiprocess: false)
      Process.setproctitle(title(nil))
      @log.call(banner.to_s)
      @log.call("UP! #{VERSION} listening on #{@binder.urls.join(", ")} " \
                "(pid #{Process.pid}, threads #{@options[:threads]})")
      @log.call(HTTP2_MISSING) if @options[:http2] && !Server::HTTP2
      @log.call("--worker-max-rss needs workers (-w 2 or more): one process has no one to hand over to; ignored") \
        if @options[:worker_max_rss].positive?
      @log.call("--refork-after needs workers (-w 2 or more): one process has no worker to fork from; ignored") \
        unless @options[:refork_after].empty?
      control = Thread.new { control(signals) }
      @acme&.start { signals.post("ACME") }
      start_control
      @lifecycle.serving(status_text)
      @lifecycle.start_pulses { [true, status_text] }
      @server.run
      @acme&.stop
      stop_control
      control.kill.join
      stop_redis
      # A stop that came after the drain, while the control thread was going, still wins.
      @restart = false if (signals.take & SignalPipe::STOPS).any?
      return :restart if @restart

      @log.call("stopped")
      :stop
    end

    # For the control endpoint: this process's server.
    def stats
      stats_header.merge(workers: 1, pid: Process.pid, pubsub: PubSub.stats, **(@server ? @server.stats : {}))
    end

    # Graceful stop, also from another thread (rackup's shutdown); timeout 0 for QUIT. New
    # connections are refused from now on; a stop during a restart's drain wins.
    def stop(timeout = nil)
      @lifecycle.stopping
      @stopping = true
      @restart = false
      timeout ? @server&.stop(timeout) : @server&.stop
      @binder.shutdown
    end

    private

    def control(signals)
      loop do
        signals.reader.wait_readable
        signals.take.each { |signal| on_signal(signal, signals) }
      end
    end

    def on_signal(signal, signals)
      case signal
      when "INT", "TERM"
        stop_after_delay(signal, signals) if @options[:stop_delay].positive? && !@stopping
        stop
      when "QUIT"
        @log.call("QUIT: stopping at once; requests in flight are cut off")
        stop(0)
      when "USR1", "USR2"
        restart(signal)
      when "HUP"
        reopen_log(signal)
        @server&.reopen_access_log
        @tls&.reload(@server, signal)
      when "ACME" then @tls.reload(@server, "ACME")
      when "TTIN", "TTOU"
        @log.call("#{signal}: one process (-w #{@options[:workers]}), no worker to add or remove; ignored")
      end
    end

    # --stop-delay: not ready at once, so the load balancer stops sending, while this process
    # goes on accepting and answering for the delay; a QUIT then stops at once, another INT
    # or TERM ends the delay. Other signals wait for the stop.
    def stop_after_delay(signal, signals)
      @lifecycle.stopping
      delay = @options[:stop_delay]
      @log.call("#{signal}: not ready; serving #{delay} s more before stopping (--stop-delay)")
      deadline = now + delay
      while (left = deadline - now).positive?
        next unless signals.reader.wait_readable(left)

        more = signals.take
        return on_signal("QUIT", signals) if more.include?("QUIT")
        break if more.intersect?(%w[INT TERM])
      end
    end

    def status_text
      stats = @server ? @server.stats : {}
      "requests #{stats[:requests].to_i}, connections #{stats[:connections].to_i}"
    end

    def restart(signal)
      return if @restart || @stopping

      how = signal == "USR1" ? "USR1 (one process: a phased restart is a restart in place)" : "USR2"
      @log.call("#{how}: restarting in place once requests in flight finish (pid #{Process.pid})")
      hook(:on_restart)
      @lifecycle.reloading
      @restart = true
      @server.stop
    end
  end
end
