# frozen_string_literal: true

require "securerandom"
require_relative "bind"
require_relative "binder"
require_relative "control_app"
require_relative "server"

module Up
  # The control endpoint (--control-url tcp://127.0.0.1:9293 or unix:///run/up-ctl.sock),
  # served by UP!'s own engine with one thread, in the master (or the single process). Created
  # and started by a runner once its own sockets are bound; stopped with it. The token is the
  # one given, or the one Up::Launcher made (control_token_made), which it logs. It owns its
  # socket (which forked workers close) and its Up::Server.
  class ControlServer
    def initialize(options, runner, log)
      @url = options[:control_url]
      @token = options[:control_token] || SecureRandom.hex(16)
      @made_token = options[:control_token].nil? || options[:control_token_made]
      @runner = runner
      @log = log
    end

    def start
      @binder = Binder.new([Bind.parse(@url, 0)]).bind
      @server = Server.new(ControlApp.new(@runner, @token), { threads: 1, shutdown_timeout: 5 })
      @server.logger = @log
      @binder.sockets.each { |s| @server.listen_fd(s.fileno) }
      @thread = Thread.new { @server.run }
      @log.call("control on #{@binder.urls.join(", ")}#{" (token #{@token})" if @made_token}")
      self
    rescue Binder::Error => e
      raise Launcher::StartError, "cannot listen for control on #{e.message}"
    end

    # What a forked worker must close: the control socket is the master's alone.
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
