# frozen_string_literal: true

require_relative "bind"
require_relative "binder"
require_relative "server"
require_relative "start_error"

module Up
  # A small endpoint beside the app's sockets, served by UP!'s own engine on one thread in the
  # master (or the single process): the control endpoint (Up::ControlServer) and the metrics
  # endpoint (--metrics-url, Up::Metrics::App). Created and started by a runner once its own
  # sockets are bound, stopped with it. It owns its socket (which forked workers close) and its
  # Up::Server.
  class SideListener
    # what: how the log and errors name it ("control", "metrics").
    def initialize(url, app, log, what)
      @url = url
      @app = app
      @log = log
      @what = what
    end

    # Binds and serves; returns self and the URLs it listens on. Raises StartError.
    def start
      @binder = Binder.new([Bind.parse(@url, 0)]).bind
      @server = Server.new(@app, { threads: 1, shutdown_timeout: 5 })
      @server.logger = @log
      @binder.sockets.each { |s| @server.listen_fd(s.fileno) }
      @thread = Thread.new { @server.run }
      [self, @binder.urls]
    rescue Binder::Error => e
      raise StartError, "cannot listen for #{@what} on #{e.message}"
    end

    def sockets
      @binder ? @binder.sockets : []
    end

    def stop
      return unless @server

      @server.stop
      @thread.join(10)
      @binder.close
      @server = nil
    end
  end
end
