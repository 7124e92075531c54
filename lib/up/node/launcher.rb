# frozen_string_literal: true

require "json"
require "securerandom"
require "socket"
require_relative "../bind"
require_relative "../binder"
require_relative "../boot_banner"
require_relative "../log"
require_relative "../start_error"
require_relative "../state_file"
require_relative "../static_files"
require_relative "../tls_settings"
require_relative "../version"
require_relative "bundle"

module Up
  module Node
    # The MRI front half of up_node: Up::CLI hands it the checked options; it compiles the app
    # (Up::Node::Bundle, reused when nothing changed), resolves the binds to addresses, and
    # replaces this process with Node running node/up_node/main.js, which gets the options as
    # JSON in UP_NODE_OPTIONS. It owns nothing once Node runs: Node has the same pid, so
    # signals and the pid file reach the server.
    class Launcher
      StartError = Up::StartError

      MAIN = File.join(Bundle::ROOT, "node", "up_node", "main.js")
      PROGRAM = "up_node"
      # The app of --static-only, which has no config.ru: it answers what the files leave to
      # it (an upgrade) with a 404, as Up::StaticFiles::NOT_FOUND_APP does on up_ruby.
      STATIC_ONLY_APP = File.join(__dir__, "static_only.ru")
      # Options of up_ruby that Node's server has no way to honour yet. Each stops the start
      # rather than being ignored, as a bad value would. A subclass names its own.
      UNSUPPORTED = { control_url: "--control-url", control_token: "--control-token", access_log: "--access-log",
                      worker_max_rss: "--worker-max-rss", acme_domains: "--acme-domain",
                      refork_after: "--refork-after" }.freeze

      # hooks: the config file's; they are Ruby blocks for MRI processes and cannot run in
      # Node, so a config file that sets any is refused.
      def initialize(options, hooks: nil)
        @options = options
        @hooks = hooks
      end

      # Does not return when Node starts (exec); raises StartError otherwise.
      def run
        @options = StateFile.with_control_token(@options)
        check_supported
        check_log_file
        # Said now, in one line, as up_ruby says it: a static directory that is not there.
        @static = StaticFiles.new(@options).to_h
        rackup = @options[:static_only] ? STATIC_ONLY_APP : @options[:rackup]
        raise StartError, "#{rackup} not found" unless File.file?(rackup)

        # Node binds the addresses itself, once the app is compiled: one taken is said now,
        # in one line, not after a compile that can take half a minute.
        check_binds
        bundle, note = compile(rackup, sizes: true)
        write_state
        # Source maps: an app's backtrace names its Ruby files and lines (Bundle#source_map).
        exec(node_env(bundle.path, note), node, "--enable-source-maps", self.class::MAIN)
      rescue Bundle::CompileError => e
        raise StartError, e.message
      rescue SystemCallError => e
        raise StartError, "cannot start node: #{e.message}"
      end

      private

      # The compiled app. An Opal build takes seconds to a minute: it is logged before it starts
      # ("compiling config.ru…") and when it ends, with how long it took. Returns the
      # Up::Node::Bundle, and for a bundle reused as it was, the line Node logs after
      # "listening on" (nil after a build).
      def compile(rackup, sizes: false)
        bundle = Bundle.new(rackup)
        shown = @options[:static_only] ? "the static site" : rackup
        state = bundle.ensure_built { log("compiling #{shown}…") }
        size = sizes ? " (#{describe_sizes(*bundle.sizes)})" : ""
        return [bundle, format("reused the compiled %s in %.2f s", shown, bundle.seconds)] if state == :reused

        log(format("compiled %s in %.2f s%s", shown, bundle.seconds, size))
        [bundle, nil]
      end

      def log(line)
        @log ||= @options[:log_file] ? Log.open(@options[:log_file]) : Log.new($stderr)
        @log.call(line)
      end

      # Node runs with this process's pid, so the state file is written now (--state-path).
      def write_state
        StateFile.write(@options[:state_path], StateFile.state(@options, self.class::PROGRAM)) if @options[:state_path]
      end

      # The binds as Up::Binder opens them, opened and closed again.
      def check_binds
        Binder.new(@options[:bind].map { |spec| Bind.parse(spec, @options[:port]) }).bind.close
      rescue Binder::Error => e
        raise StartError, "cannot listen on #{e.message}"
      end

      # What Node logs and shows about the start (Up::BootBanner): the banner after its head,
      # and the app's name for the process titles.
      def banner_settings
        banner = BootBanner.new(@options, program: self.class::PROGRAM, platform: nil)
        { banner: banner.details, title_app: banner.app_name }
      end

      # "bundle 1.3 MB", and the parser file beside it when there is one.
      def describe_sizes(bundle, parser)
        mb = ->(bytes) { format("%.1f MB", bytes / 1_000_000.0) }
        parser ? "bundle #{mb.call(bundle)}, Opal's parser #{mb.call(parser)} loaded when first needed" : "bundle #{mb.call(bundle)}"
      end

      def check_supported
        self.class::UNSUPPORTED.each do |key, flag|
          # 0 is the default of the numbers, [] of the lists: nothing asked.
          value = @options[key]
          next if value.nil? || value == 0 || value == []

          raise StartError, "#{flag} is not supported by #{self.class::PROGRAM} yet"
        end
        raise StartError, "config file hooks are not supported by #{self.class::PROGRAM} (they run on MRI)" if @hooks && !@hooks.empty?
      end

      def node
        ENV.fetch("UP_NODE", "node")
      end

      # Node writes the log; a file it could not open is refused here, as up_ruby words it.
      def check_log_file
        File.open(@options[:log_file], "a") { nil } if @options[:log_file]
      rescue SystemCallError => e
        raise StartError, "cannot open log file: #{e.message}"
      end

      def node_env(bundle_path, build_note)
        settings = @options.merge(bundle: bundle_path, binds: binds, version: VERSION, program: PROGRAM, build_note: build_note,
                                  static_files: @static, **banner_settings)
        env = { "UP_NODE_OPTIONS" => JSON.generate(settings), "NODE_PATH" => node_path }
        # -e, as up_ruby does it: the app reads RACK_ENV.
        env["RACK_ENV"] = @options[:environment] || ENV["RACK_ENV"] || "development"
        env
      end

      # Opal's nodejs stdlib loads npm packages it ships (glob for Dir), as the opal CLI
      # finds them.
      def node_path
        opal_modules = File.join(Gem.loaded_specs.fetch("opal").full_gem_path, "stdlib", "nodejs", "node_modules")
        [opal_modules, ENV["NODE_PATH"]].compact.reject(&:empty?).join(File::PATH_SEPARATOR)
      end

      # Every address to listen on, for Node: { host:, port:, ipv6:, tls: } or { path:, mode:,
      # tls: }. A host is every address it resolves to, as up_ruby binds it (localhost:
      # 127.0.0.1 and ::1); the port 0 is kept, and Node gives every TCP address the one it
      # gets first. tls: nil, or what an HTTPS bind serves (Up::TLSSettings, read by
      # node/up_node/tls.js) with the ticket secret every worker shares.
      def binds
        secret = SecureRandom.hex(32)
        settings = TLSSettings.new(@options, log: ->(line) { warn "up_node: #{line}" })
        @options[:bind].flat_map do |spec|
          bind = Bind.parse(spec, @options[:port])
          bind = bind.with_tls if @options[:secure]
          tls = bind.tls? ? settings.for(bind).merge(ticket_secret: secret) : nil
          next [{ path: bind.path, mode: bind.mode, tls: tls }] if bind.unix?

          addresses(bind).map { |ai| { host: ai.ip_address, port: bind.port, ipv6: ai.ipv6?, tls: tls } }
        end
      end

      def addresses(bind)
        found = Addrinfo.getaddrinfo(bind.host, nil, nil, :STREAM, nil, Socket::AI_PASSIVE)
        found.uniq(&:ip_address)
      rescue SocketError => e
        raise StartError, "cannot listen on #{bind}: #{e.message}"
      end
    end
  end
end
