# frozen_string_literal: true

require "securerandom"
require_relative "dev_certificate"
require_relative "start_error"

module Up
  # The HTTPS side of a start (issue 21): which certificate each TLS bind serves, its
  # Up::TLSContext, and the reload of them all from their files (HUP, `upctl reload-certs`).
  # Up::Launcher creates it from the options and the binds before binding, so a certificate
  # that does not load stops the start with one line; once the sockets are bound, #assign ties
  # each listening socket to its context; the runners and workers serve each socket with
  # #context_for. A worker keeps the copy it was forked with, and its reloads change that copy.
  #
  # A TLS bind is an ssl:// bind, or any bind under -s. Its certificate is the bind's cert= and
  # key= (ssl://), else -c and -k; -a (ca=) adds chain certificates; the config file's tls_host
  # entries add certificates picked by host name (SNI) to every TLS bind; a key with a
  # passphrase takes it from --key-password-command (key_password_command=). In development a
  # TLS bind with neither certificate nor key serves an Up::DevCertificate. The session ticket
  # secret is made here once, so every worker takes every other's tickets; a hot restart makes
  # a new one (tickets then start over: clients do one full handshake).
  class TLSSetup
    # Settings of every TLS bind; nil when no bind serves TLS. Raises StartError.
    def self.for(options, binds, log:)
      binds.any?(&:tls?) ? new(options, binds, log: log) : nil
    end

    def initialize(options, binds, log:)
      @options = options
      @log = log
      @ticket_secret = SecureRandom.bytes(32)
      @settings = binds.map { |bind| bind.tls? ? settings_of(bind) : nil }
      @contexts = {}
      @settings.compact.uniq.each { |s| @contexts[s] = context(s) }
      @by_fd = {}
    rescue TLSError => e
      raise StartError, e.message
    end

    # Ties each socket of the binder to its bind's context.
    def assign(binder)
      binder.sockets.each do |socket|
        settings = @settings[binder.bind_index(socket)]
        @by_fd[socket.fileno] = settings if settings
      end
      self
    end

    # The Up::TLSContext a listening socket serves with, nil for plain HTTP.
    def context_for(fd)
      settings = @by_fd[fd]
      settings && @contexts.fetch(settings)
    end

    # Loads every certificate again and has server use them for new connections; connections
    # open go on with theirs. Logs what it did: the new subjects, or why nothing changed (one
    # certificate that does not load keeps the old ones everywhere).
    def reload(server, who)
      fresh = @contexts.keys.to_h { |s| [s, context(s)] }
      fresh.each { |s, ctx| server&.replace_tls(@contexts[s], ctx) }
      @contexts = fresh
      @log.call("#{who}: reloaded the certificates (#{fresh.values.map(&:subject).uniq.join("; ")}); " \
                "new connections get them")
    rescue TLSError, StartError => e
      @log.call("#{who}: the certificates were not reloaded, the old ones serve on: #{e.message}")
    end

    private

    def settings_of(bind)
      own = bind.tls
      cert = own[:cert_file] || @options[:cert_file]
      key = own[:key_file] || @options[:key_file]
      cert, key = dev_certificate(bind) if cert.nil? && key.nil?
      raise StartError, "#{bind}: HTTPS needs a key for the certificate #{cert}: #{key_flag(bind)}" unless key
      raise StartError, "#{bind}: HTTPS needs the certificate of the key #{key}: #{cert_flag(bind)}" unless cert

      { cert_file: File.expand_path(cert), key_file: File.expand_path(key),
        ca_file: expand(own[:ca_file] || @options[:ca_file]),
        key_password_command: own[:key_password_command] || @options[:key_password_command],
        hosts: @options[:tls_hosts].map { |h| h.merge(cert_file: expand(h[:cert_file]), key_file: expand(h[:key_file]), ca_file: expand(h[:ca_file])) } }.freeze
    end

    # Paths are taken from the directory of the start: a hot restart goes back to it, a reload
    # may come after the app changed directory.
    def expand(path)
      path && File.expand_path(path)
    end

    def key_flag(bind)
      bind.tls.empty? ? "-k/--key-file" : "key= in #{bind}, or -k"
    end

    def cert_flag(bind)
      bind.tls.empty? ? "-c/--cert-file" : "cert= in #{bind}, or -c"
    end

    # Development only: elsewhere the missing certificate is an error.
    def dev_certificate(bind)
      env = ENV.fetch("RACK_ENV", "development")
      unless env == "development"
        raise StartError, "#{bind}: HTTPS needs -c/--cert-file and -k/--key-file " \
                          "(a self-signed certificate is made only in development; this is #{env})"
      end
      dev = DevCertificate.new.ensure!
      unless @dev_logged
        @log.call("HTTPS in development without -c/-k: serving a self-signed certificate for localhost, " \
                  "#{dev.cert_file} (browsers warn until told to trust it; never use it in production)")
        @dev_logged = true
      end
      [dev.cert_file, dev.key_file]
    rescue SystemCallError => e
      raise StartError, "cannot make a development certificate: #{e.message}"
    end

    def context(settings)
      password = settings[:key_password_command] && run_password_command(settings[:key_password_command])
      TLSContext.new(cert_file: settings[:cert_file], key_file: settings[:key_file], ca_file: settings[:ca_file],
                     key_password: password, hosts: settings[:hosts], ticket_secret: @ticket_secret)
    rescue TLSError => e
      raise TLSError, "#{e.message}; give it with --key-password-command" if e.message.include?("no passphrase was given")

      raise
    end

    # The command's output without its line break (Puma's key_password_command).
    def run_password_command(command)
      out = IO.popen(command, "r", err: File::NULL, &:read)
      raise StartError, "--key-password-command #{command.inspect} failed (#{$?})" unless $?.success?

      out.chomp
    rescue SystemCallError => e
      raise StartError, "--key-password-command #{command.inspect}: #{e.message}"
    end
  end
end
