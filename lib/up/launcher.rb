# frozen_string_literal: true

require "rack"
require "rbconfig"
require_relative "log"
require_relative "hooks"
require_relative "binder"
require_relative "single"
require_relative "cluster"
require_relative "start_error"
require_relative "load_failure"
require_relative "process_alive"
require_relative "state_file"
require_relative "static_files"
require_relative "tls_setup"
require_relative "acme/store"
require_relative "acme/self_signed"
require_relative "acme/renewer"

module Up
  # Starts UP! from checked options (Up::CLI, Up::RackHandler): opens the log, binds the
  # sockets (or adopts them after a re-exec), writes the pid file, and runs one process
  # (Up::Single, -w 0 or 1) or a master and workers (Up::Cluster). When the runner asks for a
  # hot restart (USR2) it re-executes this process in place: same pid, same command line, the
  # listening sockets kept open. It owns the log, the sockets and the pid file; the
  # certificates of HTTPS binds (Up::TLSSetup) are loaded before any socket is bound, and with
  # --acme-domain the ACME directory is made ready first and its Up::Acme::Renewer handed to
  # the runner, which runs it.
  class Launcher
    StartError = Up::StartError

    SERVER_OPTIONS = Runner::SERVER_OPTIONS
    # app: an app already loaded (rackup's), else config.ru is loaded (again on each restart).
    # hooks: an Up::Hooks (the config file's). restart_argv: the command a USR2 re-executes;
    # by default the one that started this process, taken now, before the process title
    # changes (see .command_line).
    def initialize(options, app: nil, hooks: Hooks.new, restart_argv: nil)
      @options = options
      @app = app
      @hooks = hooks
      @restart_argv = restart_argv || Launcher.command_line
      @restart_dir = Dir.pwd
    end

    # The command line this process started with, Ruby's own options (-I, -r) included.
    # Linux keeps it in /proc/self/cmdline; ARGV will not do, since rackup has consumed its
    # options from it by the time it calls the handler. Elsewhere: ruby, $0 and ARGV.
    def self.command_line
      File.binread("/proc/self/cmdline").split("\0")
    rescue SystemCallError
      [RbConfig.ruby, $PROGRAM_NAME, *ARGV]
    end

    def run
      @options = StateFile.with_control_token(@options)
      raise_file_limit
      # -e, as Puma does it: the app reads RACK_ENV (Rails: when RAILS_ENV is unset).
      ENV["RACK_ENV"] = @options[:environment] if @options[:environment]
      ENV["RACK_ENV"] ||= "development"
      @log = open_log
      binds = parse_binds
      acme = acme_renewer(binds)
      # A static directory or site config that is not there is the user's to fix: said now,
      # in one line, rather than by each worker that fails to boot over it.
      StaticFiles.new(@options).to_h
      check_pid_file
      tls = TLSSetup.for(@options, binds, log: @log)
      warn_unused_certificate unless tls
      @binder = listen(binds)
      tls&.assign(@binder)
      write_pid_file
      StateFile.write(@options[:state_path], StateFile.state(@options, Runner::TITLE)) if @options[:state_path]
      runner_class = @options[:workers] > 1 ? Cluster : Single
      @runner = runner_class.new(@options, log: @log, hooks: @hooks, binder: @binder, load_app: method(:app),
                                 tls: tls, acme: acme)
      if @runner.run == :stop
        @binder.close # removes the socket files; a restart keeps the sockets instead
        return 0
      end

      restart!
    ensure
      remove_pid_file
    end

    # Graceful stop from another thread (rackup's shutdown).
    def stop
      @runner&.stop
    end

    private

    # --static-only has no app: the engine answers every request but the rare ones it passes
    # on (an upgrade), which get a 404.
    def app
      return @app if @app
      return StaticFiles::NOT_FOUND_APP if @options[:static_only]

      load_app
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
      path = File.expand_path(@options[:rackup], @restart_dir)
      raise StartError, "#{@options[:rackup]} not found" unless File.file?(path)

      begin
        Rack::Builder.parse_file(path)
      rescue StandardError, ScriptError => e
        raise StartError, LoadFailure.new(e).to_s
      end
    end

    # The binds; the port is --port for those without one, and -s makes each serve HTTPS.
    def parse_binds
      @options[:bind].map do |spec|
        bind = Bind.parse(spec, @options[:port])
        @options[:secure] ? bind.with_tls : bind
      end
    end

    # Every bind, opened before anything forks (or adopted after a re-exec).
    def listen(binds)
      Binder.new(binds).bind
    rescue Binder::Error => e
      raise StartError, "cannot listen on #{e.message}"
    end

    # --acme-domain: the --acme-dir ready (a placeholder certificate until the first one comes)
    # and the Up::Acme::Renewer that the runner starts; nil without ACME. HTTP-01 when a plain
    # TCP bind can answer it, else TLS-ALPN-01 on the HTTPS binds.
    def acme_renewer(binds)
      names = @options[:acme_domains]
      return nil if names.empty?

      raise StartError, "--acme-domain needs --acme-dir, where the account key and certificates are kept" unless @options[:acme_dir]
      raise StartError, "--acme-domain needs an HTTPS bind: -s, or bind ssl://0.0.0.0:443" unless binds.any?(&:tls?)
      if @options[:cert_file] || @options[:key_file]
        raise StartError, "--acme-domain and -c/-k both name the certificate: give one of them"
      end

      Acme::Renewer.load_client!
      store = Acme::Store.new(@options[:acme_dir])
      if store.prepare!(names)
        @log.call("ACME: serving a self-signed placeholder for #{names.join(", ")} until the first certificate " \
                  "comes (#{store.cert_file})")
      end
      challenge = binds.any? { |b| !b.tls? && b.host } ? "http-01" : "tls-alpn-01"
      Acme::Renewer.new(@options, store, challenge, log: @log)
    rescue SystemCallError => e
      raise StartError, "--acme-dir #{@options[:acme_dir]}: #{e.message}"
    end

    def warn_unused_certificate
      return unless @options[:cert_file] || @options[:key_file]

      @log.call("-c/-k are given but no bind serves HTTPS: add -s, or bind ssl://HOST:PORT")
    end

    def open_log
      @options[:log_file] ? Log.open(@options[:log_file]) : Log.new($stderr)
    rescue SystemCallError => e
      raise StartError, "cannot open log file: #{e.message}"
    end

    # ---------------------------------------------------------------- pid file

    # A pid file that names another live process means a server runs already: refuse, and
    # leave its file alone. Ours (after a re-exec) or a stale one is overwritten.
    def check_pid_file
      path = @options[:pid_file]
      return unless path && File.file?(path)

      pid = File.read(path).to_i
      return if pid <= 0 || pid == Process.pid || !ProcessAlive.alive?(pid)

      raise StartError, "#{path} names process #{pid}, which is running (another UP!?); " \
                        "stop it, or remove the file if it is not UP!"
    rescue SystemCallError => e
      raise StartError, "cannot read pid file: #{e.message}"
    end

    # Written once the sockets are bound, so a start that fails never touches it.
    def write_pid_file
      return unless @options[:pid_file]

      File.write(@options[:pid_file], "#{Process.pid}\n")
      @pid_file_written = true
    rescue SystemCallError => e
      raise StartError, "cannot write pid file: #{e.message}"
    end

    def remove_pid_file
      path = @options[:pid_file]
      return unless @pid_file_written && File.exist?(path) && File.read(path).to_i == Process.pid

      File.delete(path)
    rescue SystemCallError
      nil
    end

    # ---------------------------------------------------------------- hot restart

    # Replaces this process's image with a new run of the same command (exec keeps the pid,
    # so systemd and the pid file stay right). The sockets and what the runner names stay
    # open; everything else is closed on exec. Returns (status 1) only when exec fails.
    def restart!
      env = @binder.exec_env.merge(@runner.exec_env)
      env.merge!(StateFile.exec_env(@options))
      fds = (@binder.exec_fds + @runner.exec_fds).to_h { |fd| [fd, fd] }
      @log.call("re-executing #{@restart_argv.join(" ")}")
      @pid_file_written = false # the new image keeps it: same pid
      Dir.chdir(@restart_dir)
      Kernel.exec(env, *@restart_argv, fds)
    rescue SystemCallError => e
      @pid_file_written = true
      @log.call("hot restart failed: #{e.message}")
      1
    end
  end
end
