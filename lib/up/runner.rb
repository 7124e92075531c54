# frozen_string_literal: true

require "time"
require_relative "boot_banner"
require_relative "control_server"
require_relative "lifecycle"
require_relative "metrics/app"
require_relative "side_listener"
require_relative "server"
require_relative "signal_pipe"
require_relative "static_files"

module Up
  # What the two ways of running UP! share: Up::Single (one process) and Up::Cluster (a master
  # and forked workers) are made by Up::Launcher with the checked options, the log, the hooks,
  # the bound sockets (Up::Binder) and a way to load the app. #run serves until a stop and
  # returns :stop, or :restart when the launcher is to re-execute this process in place
  # (USR2); then #exec_env and #exec_fds say what the new image must inherit. A runner owns
  # its signal pipe and, in cluster mode, the workers; not the sockets, log, pid file or
  # certificates.
  class Runner
    # The settings Up::Server.new takes (ext/up/ruby/server_object.c).
    SERVER_OPTIONS = %i[threads max_head_size max_headers max_body_size spool_threshold head_timeout
                        body_timeout keepalive_timeout write_timeout max_pipeline
                        shutdown_timeout access_log early_hints http2 io_thread max_msg ws_ping
                        sse_heartbeat ws_max_pending ws_deflate].freeze

    # What --http2 (the default) says when the extension was built without libnghttp2.
    HTTP2_MISSING = "HTTP/2 is off: UP! was built without libnghttp2 (apt-get install libnghttp2-dev, then reinstall)"

    # Process titles start with this, so `ps` tells UP!'s processes apart from others.
    TITLE = "up_ruby"

    # tls: the Up::TLSSetup of the HTTPS binds, nil when none.
    # acme: the Up::Acme::Renewer of --acme-domain, nil when none; the runner runs it.
    def initialize(options, log:, hooks:, binder:, load_app:, tls: nil, acme: nil)
      @options = options
      @tls = tls
      @acme = acme
      @log = log
      @hooks = hooks
      @binder = binder
      @load_app = load_app
      @started_at = Time.now
      @started = now
      @lifecycle = Lifecycle.new
    end

    # Fds the new image keeps, beyond the listening sockets, and how it finds them.
    def exec_env
      {}
    end

    def exec_fds
      []
    end

    private

    # The control endpoint, when --control-url asks for one (Up::ControlServer).
    def start_control
      @control = ControlServer.new(@options, self, @log).start if @options[:control_url]
      start_metrics if @options[:metrics_url]
    end

    # --metrics-url: /metrics, /live and /ready (Up::Metrics::App).
    def start_metrics
      @metrics, urls = SideListener.new(@options[:metrics_url], Metrics::App.new(self, @lifecycle), @log, "metrics").start
      @log.call("metrics on #{urls.join(", ")} (/metrics, /live, /ready)")
    end

    def stop_control
      @control&.stop
      @metrics&.stop
      @lifecycle.stop_pulses
    end

    # --redis-url: pub/sub across servers, the default engine from before the app loads (which
    # may choose another). In cluster mode the master runs it; workers reach it through it.
    def start_redis
      url = @options[:redis_url] or return
      @redis = PubSub::Redis.new(url, logger: ->(line) { @log.call("pub/sub: #{line}") })
      PubSub.default = @redis
      @log.call("pub/sub through #{PubSub::Redis::Address.parse(url)}")
    end

    # Sends what is still queued for Redis (briefly), then lets go of it; before a stop or the
    # re-exec of a restart, whose new image connects again.
    def stop_redis
      return unless @redis

      PubSub.detach(@redis)
      @redis.close
      @redis = nil
    end

    # What every stats report starts with.
    def stats_header
      { started_at: @started_at.utc.iso8601, uptime: (now - @started).round(3) }
    end

    # Settings for Up::Server.new; rack.errors is the log's IO. Workers share each listening
    # socket and a new connection wakes one of them, not all (EPOLLEXCLUSIVE): measured
    # against one SO_REUSEPORT socket per worker, see docs/configuration.md, "Load spread".
    def server_options(multiprocess:)
      @options.slice(*SERVER_OPTIONS).merge(multiprocess: multiprocess, errors: @log.io,
                                            exclusive_accept: multiprocess, static: static_files,
                                            metrics: !@options[:metrics_url].nil?)
    end

    # The files the engine answers before the app (Up::StaticFiles), worked out once: after
    # the app is loaded when it is loaded here (a Rails app names its public directory).
    def static_files
      @static_files = StaticFiles.new(@options).to_h unless defined?(@static_files)
      @static_files
    end

    # A new Up::Server for app on the bound sockets, logging to our log.
    def new_server(app, multiprocess:)
      server = Server.new(app, server_options(multiprocess: multiprocess))
      server.logger = @log
      @binder.sockets.each { |s| server.listen_fd(s.fileno, @tls&.context_for(s.fileno)) }
      server
    end

    # Runs a hook; one that raises is logged and the server goes on (as Puma does).
    def hook(name, *args)
      @hooks.run(name, *args)
    rescue StandardError, ScriptError => e
      @log.call("#{name} hook failed: #{e.full_message(highlight: false, order: :top)}")
    end

    # "up_ruby 0.2.0 master [app] tcp://127.0.0.1:3000", "up_ruby 0.2.0 worker 1 [app] ..."
    # (Up::BootBanner); role nil for one process.
    def title(role)
      banner.title(role, @binder.urls)
    end

    def banner
      @banner ||= BootBanner.new(@options, program: TITLE)
    end

    # HUP: logrotate has renamed the file; go on in a new one under its name.
    def reopen_log(signal)
      return @log.call("#{signal}: no log file to reopen (the log is stderr; see -l)") unless @log.path

      @log.call("#{signal}: reopened #{@log.path}") if @log.reopen
    end

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
