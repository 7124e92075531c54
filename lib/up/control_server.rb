# frozen_string_literal: true

require "securerandom"
require_relative "control_app"
require_relative "side_listener"

module Up
  # The control endpoint (--control-url tcp://127.0.0.1:9293 or unix:///run/up-ctl.sock),
  # served by UP!'s own engine with one thread, in the master (or the single process). Created
  # and started by a runner once its own sockets are bound; stopped with it. The token is the
  # one given, or the one Up::Launcher made (control_token_made), which it logs. It owns its
  # Up::SideListener.
  class ControlServer
    def initialize(options, runner, log)
      @url = options[:control_url]
      @token = options[:control_token] || SecureRandom.hex(16)
      @made_token = options[:control_token].nil? || options[:control_token_made]
      @runner = runner
      @log = log
    end

    def start
      @listener, urls = SideListener.new(@url, ControlApp.new(@runner, @token), @log, "control").start
      @log.call("control on #{urls.join(", ")}#{" (token #{@token})" if @made_token}")
      self
    end

    # What a forked worker must close: the control socket is the master's alone.
    def sockets
      @listener ? @listener.sockets : []
    end

    def stop
      @listener&.stop
    end
  end
end
