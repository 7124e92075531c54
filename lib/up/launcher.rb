# frozen_string_literal: true

require "rack"
require_relative "binder"
require_relative "server"

module Up
  # Starts a server from parsed CLI options: loads config.ru, binds, writes the pid file,
  # traps INT/TERM for a graceful stop and runs until then. Created by Up::CLI.
  class Launcher
    # A reason the server cannot start that the user can fix (no config.ru, port in use).
    class StartError < StandardError; end

    SERVER_OPTIONS = %i[threads max_head_size max_headers max_body_size spool_threshold head_timeout
                        body_timeout keepalive_timeout write_timeout max_pipeline
                        shutdown_timeout access_log].freeze

    def initialize(options, app: nil)
      @options = options
      @app = app
    end

    def run
      raise_file_limit
      # -e, as Puma does it: the app reads RACK_ENV (Rails: when RAILS_ENV is unset).
      ENV["RACK_ENV"] = @options[:environment] if @options[:environment]
      ENV["RACK_ENV"] ||= "development"
      log_io = open_log
      app = @app || load_app
      @binder = listen
      write_pid_file
      if @options[:workers] > 1
        run_cluster(app, log_io)
      else
        run_single(app, log_io)
      end
      0
    ensure
      @binder&.close
      remove_pid_file
    end

    # Graceful stop from another thread (rackup's shutdown).
    def stop
      @server&.stop
    end

    private

    def run_single(app, log_io)
      server = @server = Server.new(app, @options.slice(*SERVER_OPTIONS).merge(multiprocess: false))
      server.log_io = log_io
      @binder.sockets.each { |s| server.listen_fd(s.fileno) }
      trap_signals(server)
      server.log("UP! #{VERSION} listening on #{@binder.urls.join(", ")} " \
                 "(pid #{Process.pid}, threads #{@options[:threads]})")
      server.run
      server.log("stopped")
    end

    def run_cluster(app, log_io)
      require_relative "cluster"
      Cluster.new(@options, app, @options.slice(*SERVER_OPTIONS), Log.new(log_io), @binder).run
    end

    # Each connection is a file descriptor; the usual soft limit of 1024 would cap a server
    # far below what the engine holds, so take what the hard limit allows.
    def raise_file_limit
      soft, hard = Process.getrlimit(:NOFILE)
      Process.setrlimit(:NOFILE, hard) if soft < hard
    rescue SystemCallError, NotImplementedError
      nil
    end

    def load_app
      path = File.expand_path(@options[:rackup])
      raise StartError, "#{@options[:rackup]} not found" unless File.file?(path)

      Rack::Builder.parse_file(path)
    end

    # Every bind, opened before anything forks; the port is --port for binds without one.
    def listen
      binds = @options[:bind].map { |spec| Bind.parse(spec, @options[:port]) }
      Binder.new(binds).listen
    rescue Binder::Error => e
      raise StartError, "cannot listen on #{e.message}"
    end

    def open_log
      return $stderr unless @options[:log_file]

      File.open(@options[:log_file], "a").tap { |f| f.sync = true }
    rescue SystemCallError => e
      raise StartError, "cannot open log file: #{e.message}"
    end

    def write_pid_file
      return unless @options[:pid_file]

      File.write(@options[:pid_file], "#{Process.pid}\n")
    rescue SystemCallError => e
      raise StartError, "cannot write pid file: #{e.message}"
    end

    def remove_pid_file
      path = @options[:pid_file]
      File.delete(path) if path && File.exist?(path) && File.read(path).to_i == Process.pid
    rescue SystemCallError
      nil
    end

    # The trap only asks for a stop: Server#stop sets a flag and wakes the loop.
    def trap_signals(server)
      %w[INT TERM].each { |signal| Signal.trap(signal) { server.stop } }
    end
  end
end
