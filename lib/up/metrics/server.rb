# frozen_string_literal: true

require_relative "../bind"
require_relative "../binder"
require_relative "../server"
require_relative "../start_error"
require_relative "app"

module Up
  module Metrics
    # The metrics endpoint (--metrics-url tcp://0.0.0.0:9394 or unix:///run/up-metrics.sock),
    # served by UP!'s own engine with one thread, in the master (or the single process), apart
    # from the app's sockets so that a busy or stopping app never delays a probe. Created and
    # started by a runner once its own sockets are bound; stopped with it. It owns its socket
    # (which forked workers close) and its Up::Server.
    class Server
      def initialize(url, app, log)
        @url = url
        @app = app
        @log = log
      end

      def start
        @binder = Binder.new([Bind.parse(@url, 0)]).bind
        @server = Up::Server.new(@app, { threads: 1, shutdown_timeout: 5 })
        @server.logger = @log
        @binder.sockets.each { |s| @server.listen_fd(s.fileno) }
        @thread = Thread.new { @server.run }
        @log.call("metrics on #{@binder.urls.join(", ")} (/metrics, /live, /ready)")
        self
      rescue Binder::Error => e
        raise StartError, "cannot listen for metrics on #{e.message}"
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
end
