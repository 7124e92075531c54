# frozen_string_literal: true

require "securerandom"
require_relative "start_error"
require_relative "tls_settings"

module Up
  # The HTTPS side of a start: which certificate each TLS bind serves, its
  # Up::TLSContext, and the reload of them all from their files (HUP, `upctl reload-certs`).
  # Up::Launcher creates it from the options and the binds before binding, so a certificate
  # that does not load stops the start with one line; once the sockets are bound, #assign ties
  # each listening socket to its context; the runners and workers serve each socket with
  # #context_for. A worker keeps the copy it was forked with, and its reloads change that copy.
  #
  # A TLS bind is an ssl:// bind, or any bind under -s; what it serves is Up::TLSSettings'
  # business. The session ticket secret is made here once, so every worker takes every
  # other's tickets; a hot restart makes a new one (tickets then start over: clients do one
  # full handshake).
  class TLSSetup
    # The setup of the binds, nil when none serves HTTPS. Raises StartError.
    def self.for(options, binds, log:)
      binds.any?(&:tls?) ? new(options, binds, log: log) : nil
    end

    def initialize(options, binds, log:)
      @log = log
      @settings_of = TLSSettings.new(options, log: log)
      @ticket_secret = SecureRandom.bytes(32)
      @settings = binds.map { |bind| bind.tls? ? @settings_of.for(bind) : nil }
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

    def context(settings)
      TLSContext.new(cert_file: settings[:cert_file], key_file: settings[:key_file], ca_file: settings[:ca_file],
                     key_password: @settings_of.password(settings), hosts: settings[:hosts],
                     ticket_secret: @ticket_secret, acme_challenge_dir: settings[:acme_challenge_dir])
    rescue TLSError => e
      raise TLSError, "#{e.message}; give it with --key-password-command" if e.message.include?("no passphrase was given")

      raise
    end
  end
end
