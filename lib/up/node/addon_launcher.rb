# frozen_string_literal: true

require "json"
require_relative "../binder"
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
    # inherits them too and the engine accepts on the shared sockets.
    class AddonLauncher < Launcher
      MAIN = File.join(Bundle::ROOT, "node", "up", "main.js")
      PROGRAM = "up"
      ADDON = File.join(Bundle::ROOT, "lib", "up", "up.node")

      # Does not return when Node starts (exec); raises StartError otherwise.
      def run
        raise StartError, "#{ADDON} is missing: run bin/setup (or ext/up/node/build)" unless File.file?(ADDON)

        check_supported
        check_no_tls
        check_log_file
        # The engine's static file handler gets what up_ruby's gets (ext/up/node/static.c).
        @static = StaticFiles.new(@options).to_h
        rackup = @options[:static_only] ? STATIC_ONLY_APP : @options[:rackup]
        raise StartError, "#{rackup} not found" unless File.file?(rackup)

        binder = listen
        bundle = Bundle.new(rackup)
        state = bundle.ensure_built
        note = format("%s %s in %.2f s", state == :built ? "compiled" : "reused the compiled", rackup, bundle.seconds)
        fds = binder.exec_fds
        binder.sockets.each { |s| s.close_on_exec = false }
        exec(addon_env(bundle.path, note, binder), node, "--enable-source-maps", MAIN, **fds.to_h { |fd| [fd, fd] })
      rescue Bundle::CompileError => e
        raise StartError, e.message
      rescue SystemCallError => e
        raise StartError, "cannot start node: #{e.message}"
      end

      private

      # The addon listens with the plain transport only: a user asking for HTTPS (-s, or an
      # ssl:// bind) must not be served plaintext, so the start stops in one line.
      def check_no_tls
        tls = @options[:secure] || @options[:bind].any? { |spec| Bind.parse(spec, @options[:port]).tls? }
        raise StartError, "HTTPS (-s, ssl:// binds) is not supported by up yet: use up_ruby or up_node" if tls
      rescue Bind::Error => e
        raise StartError, "cannot listen on #{e.message}"
      end

      def listen
        binds = @options[:bind].map { |spec| Bind.parse(spec, @options[:port]) }
        Binder.new(binds).bind
      rescue Binder::Error => e
        raise StartError, "cannot listen on #{e.message}"
      end

      def addon_env(bundle_path, note, binder)
        settings = @options.merge(bundle: bundle_path, version: VERSION, build_note: note,
                                  listen_fds: binder.exec_fds, listen_urls: binder.urls, static_files: @static)
        { "UP_NODE_OPTIONS" => JSON.generate(settings), "NODE_PATH" => node_path,
          "RACK_ENV" => @options[:environment] || ENV["RACK_ENV"] || "development" }
      end
    end
  end
end
