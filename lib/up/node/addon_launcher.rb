# frozen_string_literal: true

require "json"
require "rbconfig"
require_relative "../binder"
require_relative "../tls_setup"
require_relative "../native_extension"
require_relative "launcher"

module Up
  module Node
    # The MRI front half of `up`: as up_node's (Up::Node::Launcher: the same Opal bundle, the
    # same options as JSON), but Node runs node/up/main.js, which serves through the UP!
    # engine compiled as a Node-API addon (lib/up/up.node, built by ext/up/node/build) instead
    # of Node's http module.
    #
    # It opens the listening sockets itself (Up::Binder, as up_ruby does: the same binds, Unix
    # sockets included, and the same messages when one cannot be bound) and Node inherits them
    # across exec, their numbers in the options (listen_fds); with -w N every cluster worker
    # inherits them too and the engine accepts on the shared sockets. A TLS bind (ssl://, or any
    # under -s) gets its settings beside its socket (listen_tls) and the engine serves it with
    # its TLS transport (ext/up/node/tls.c), as up_ruby does.
    #
    # Restarts (node/up/restart.js) run this command again: USR2 re-executes it in place, with
    # the listening sockets in UP_LISTEN_FDS (Up::Binder adopts them) and, in a cluster, the
    # old workers' channels in UP_OLD_CHECK_FDS, passed on to Node; and before a restart, with
    # UP_BUILD_ONLY set, it only compiles the app, so code that does not compile is said while
    # the old code still serves.
    class AddonLauncher < Launcher
      MAIN = File.join(Bundle::ROOT, "node", "up", "main.js")
      PROGRAM = "up"
      ADDON = File.join(Bundle::ROOT, "lib", "up", "up.node")
      ENV_BUILD_ONLY = "UP_BUILD_ONLY"
      ENV_OLD_CHECKS = "UP_OLD_CHECK_FDS" # as Up::Cluster's, read by node/up/restart.js
      # --control-url (node/up_node/control_server.js), --access-log (ext/up/node/served.c) and
      # --redis-url work on `up`; up_node still refuses the first two. --metrics-url and
      # --stop-delay are up_node's (node/up_node/metrics.js) on both; the rest of up_ruby's
      # production settings are not there yet (docs/production.md).
      UNSUPPORTED = { worker_max_rss: "--worker-max-rss", acme_domains: "--acme-domain",
                      refork_after: "--refork-after" }.freeze

      def initialize(options, hooks: nil)
        super
        # Taken before anything changes the process: what a restart runs, and where.
        @restart = { argv: command_line, dir: Dir.pwd,
                     env: { "NODE_PATH" => ENV.fetch("NODE_PATH", nil), "RACK_ENV" => ENV.fetch("RACK_ENV", nil) } }
        @options = StateFile.with_control_token(@options)
        # A token made here is the one the restarted image takes (StateFile.with_control_token).
        @restart[:env].merge!(StateFile.exec_env(@options))
      end

      # Does not return when Node starts (exec); raises StartError otherwise. With
      # UP_BUILD_ONLY, returns 0 once the app is compiled.
      def run
        raise StartError, addon_missing unless File.file?(ADDON)

        check_supported
        check_log_file
        check_access_log
        # The engine's static file handler gets what up_ruby's gets (ext/up/node/static.c).
        @static = StaticFiles.new(@options).to_h
        rackup = @options[:static_only] ? STATIC_ONLY_APP : @options[:rackup]
        raise StartError, "#{rackup} not found" unless File.file?(rackup)
        return build_only(rackup) if ENV.delete(ENV_BUILD_ONLY)

        binder = listen
        bundle, note = compile(rackup)
        write_state
        fds = binder.exec_fds + old_check_fds
        binder.sockets.each { |s| s.close_on_exec = false }
        exec(addon_env(bundle.path, note, binder), node, "--enable-source-maps", MAIN, **fds.to_h { |fd| [fd, fd] })
      rescue Bundle::CompileError => e
        raise StartError, e.message
      rescue SystemCallError => e
        raise StartError, "cannot start node: #{e.message}"
      end

      private

      # The addon is built with the extension when Node's headers are there (ext/up/extconf.rb);
      # without them the gem installs all the same and this says what to do, in one line.
      def addon_missing
        headers = "Node's headers (Debian: apt-get install nodejs, or libnode-dev)"
        if File.file?(File.join(Bundle::ROOT, "Rakefile"))
          return %(#{ADDON} is not built: with #{headers}, run "cd #{Bundle::ROOT} && rake compile")
        end

        pristine = ENV["BUNDLE_GEMFILE"] ? "bundle pristine opal-up" : "gem pristine opal-up"
        %(the Node addon was not built when opal-up was installed, for want of #{headers}: install them, then run "#{pristine}")
      end

      # The command line this process started with, as Up::Launcher.command_line reads it
      # (Ruby's options included; rackup's consumed ones too).
      def command_line
        File.binread("/proc/self/cmdline").split("\0")
      rescue SystemCallError
        [RbConfig.ruby, $PROGRAM_NAME, *ARGV]
      end

      def build_only(rackup)
        Bundle.new(rackup).ensure_built
        0
      end

      # The previous image's workers' channels (a hot restart of a cluster), kept open for Node.
      def old_check_fds
        ENV.fetch(ENV_OLD_CHECKS, "").split(",").map { |fd| Integer(fd, 10) }
      rescue ArgumentError
        raise StartError, "#{ENV_OLD_CHECKS}=#{ENV.fetch(ENV_OLD_CHECKS)} is not a list of descriptors"
      end

      # The binds (-s makes each serve HTTPS), their sockets, and what each TLS one serves
      # (Up::TLSSettings, as up_ruby resolves it). Every certificate is loaded here first, by
      # up_ruby's Up::TLSSetup, so one that does not load stops the start with up_ruby's line.
      def listen
        binds = @options[:bind].map do |spec|
          bind = Bind.parse(spec, @options[:port])
          @options[:secure] ? bind.with_tls : bind
        end
        tls = tls_settings(binds)
        binder = Binder.new(binds).bind
        @listen_tls = binder.sockets.map { |s| tls[binder.bind_index(s)] }
        binder
      rescue Binder::Error, Bind::Error => e
        raise StartError, "cannot listen on #{e.message}"
      end

      # Per bind: nil, or its Up::TLSSettings with the session ticket secret every process
      # shares (tls.h), for ext/up/node/tls.c.
      def tls_settings(binds)
        return binds.map { nil } unless binds.any?(&:tls?)

        log = ->(line) { warn "up: #{line}" }
        TLSSetup.for(@options, binds, log: log)
        settings = TLSSettings.new(@options, log: ->(_line) {})
        secret = SecureRandom.hex(32)
        binds.map { |bind| bind.tls? ? settings.for(bind).merge(ticket_secret: secret) : nil }
      end

      # As check_log_file: a file Node could not open is refused here, in one line.
      def check_access_log
        File.open(@options[:access_log], "a") { nil } if @options[:access_log]
      rescue SystemCallError => e
        raise StartError, "cannot open access log: #{e.message}"
      end

      # Where the control endpoint listens, for Node: { path: } or { host:, port: }; nil without
      # --control-url (Up::Options checked its form).
      def control_address
        return nil unless @options[:control_url]

        bind = Bind.parse(@options[:control_url], nil)
        return { host: bind.host.delete_prefix("[").delete_suffix("]"), port: bind.port } unless bind.unix?

        remove_stale_socket(bind.path)
        { path: bind.path }
      end

      # A socket file nobody listens on is what a killed server leaves: Node takes its place,
      # as up_ruby's Up::Binder does.
      def remove_stale_socket(path)
        return unless File.socket?(path)

        Socket.unix(path).close
        raise StartError, "cannot listen for control on unix://#{path}: a server is listening on it already"
      rescue Errno::ECONNREFUSED
        File.unlink(path)
      end

      def addon_env(bundle_path, note, binder)
        settings = @options.merge(bundle: bundle_path, version: VERSION, program: PROGRAM, build_note: note, control: control_address, **banner_settings,
                                  listen_fds: binder.exec_fds, listen_tls: @listen_tls, listen_urls: binder.urls, static_files: @static,
                                  restart: @restart.merge(listen_env: binder.exec_env.fetch(Binder::ENV_FDS)))
        { "UP_NODE_OPTIONS" => JSON.generate(settings), "NODE_PATH" => node_path,
          "RACK_ENV" => @options[:environment] || ENV["RACK_ENV"] || "development" }
      end
    end
  end
end
