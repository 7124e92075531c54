# frozen_string_literal: true

require_relative "runner"

module Up
  # One process, no master (-w 0 or 1, and rackup): it loads the app and serves it on the
  # main thread. Created by Up::Launcher; owns its Up::Server and a control thread that acts
  # on signals (the traps only write a byte to its pipe):
  #
  #   INT, TERM    graceful stop: no new connections, in-flight requests finish within
  #                --shutdown-timeout
  #   QUIT         immediate stop: requests in flight are cut off now
  #   USR2, USR1   restarts, not built yet: logged and ignored
  #   HUP          reopen the log file
  #   TTIN, TTOU   logged and ignored (there are no workers to add or remove)
  class Single < Runner
    SIGNALS = %w[INT TERM QUIT HUP USR1 USR2 TTIN TTOU].freeze

    def run
      signals = SignalPipe.new.trap(*SIGNALS) # first: a signal while the app loads waits
      @server = new_server(@load_app.call, multiprocess: false)
      Process.setproctitle(title(nil))
      @log.call("UP! #{VERSION} listening on #{@binder.urls.join(", ")} " \
                "(pid #{Process.pid}, threads #{@options[:threads]})")
      control = Thread.new { control(signals) }
      @server.run
      control.kill.join
      @log.call("stopped")
      :stop
    end

    # Graceful stop, also from another thread (rackup's shutdown); timeout 0 for QUIT. New
    # connections are refused from now on.
    def stop(timeout = nil)
      timeout ? @server&.stop(timeout) : @server&.stop
      @binder.shutdown
    end

    private

    def control(signals)
      loop do
        signals.reader.wait_readable
        signals.take.each { |signal| on_signal(signal) }
      end
    end

    def on_signal(signal)
      case signal
      when "INT", "TERM"
        stop
      when "QUIT"
        @log.call("QUIT: stopping at once; requests in flight are cut off")
        stop(0)
      when "USR1", "USR2"
        @log.call("#{signal}: restarts are not built yet; ignored")
      when "HUP"
        reopen_log(signal)
      when "TTIN", "TTOU"
        @log.call("#{signal}: one process (-w #{@options[:workers]}), no worker to add or remove; ignored")
      end
    end
  end
end
