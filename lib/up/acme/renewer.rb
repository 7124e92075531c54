# frozen_string_literal: true

require_relative "../start_error"
require_relative "order"

module Up
  module Acme
    # Keeps the certificate of --acme-domain issued and fresh: a thread of the process that
    # owns the binds (the master of a cluster, or the one process) orders a certificate when
    # the store has only the placeholder, or names other than the ones asked for, or when
    # RENEW_DAYS (or a third of its lifetime, if less) are left; then calls on_certificate,
    # which has the runner reload the certificates as HUP does. An order that fails logs one
    # line and is tried again after a back-off that doubles up to BACKOFF_MAX; the certificate
    # served meanwhile stays. Up::Launcher creates it; the runner starts and stops it.
    class Renewer
      LETS_ENCRYPT = "https://acme-v02.api.letsencrypt.org/directory"
      LETS_ENCRYPT_STAGING = "https://acme-staging-v02.api.letsencrypt.org/directory"
      RENEW_DAYS = 30
      BACKOFF = 10
      BACKOFF_MAX = 3600
      # Let's Encrypt answers a stale nonce now and then (RFC 8555 §6.5); the gem retries.
      BAD_NONCE_RETRIES = 5

      # The gem, loaded only when ACME is asked for. Raises StartError when it is missing.
      def self.load_client!
        require "acme/client"
      rescue LoadError
        raise StartError, "--acme-domain needs the acme-client gem: gem install acme-client " \
                          "(or add it to the Gemfile)"
      end

      # challenge: "http-01" (there is a plain bind) or "tls-alpn-01".
      def initialize(options, store, challenge, log:)
        @names = options[:acme_domains]
        @email = options[:acme_email]
        @directory = options[:acme_directory] || (options[:acme_staging] ? LETS_ENCRYPT_STAGING : LETS_ENCRYPT)
        @ca_file = options[:acme_ca_file] && File.expand_path(options[:acme_ca_file])
        @store = store
        @challenge = challenge
        @log = log
        @failures = 0
      end

      # Starts the thread; on_certificate runs on it after each new certificate.
      def start(&on_certificate)
        @on_certificate = on_certificate
        @thread = Thread.new { loop { sleep step } }
        @thread.report_on_exception = false
        self
      end

      def stop
        @thread&.kill&.join
        @thread = nil
      end

      private

      # One turn: an order when one is due. Returns the seconds until the next turn.
      def step
        wait = due_in(@store.certificate)
        return wait if wait.positive?

        Order.new(client, @store, @names, @challenge).run
        @failures = 0
        cert = @store.certificate
        @log.call("ACME: #{@names.join(", ")}: certificate from #{cert.issuer.to_utf8} until " \
                  "#{cert.not_after.utc.iso8601}; reloading it")
        @on_certificate&.call
        [due_in(cert), 1].max
      rescue StandardError => e
        @failures += 1
        delay = [BACKOFF * (2**(@failures - 1)), BACKOFF_MAX].min
        @client = nil
        @log.call("ACME: #{@names.join(", ")}: the order failed (#{e.class}: #{e.message.lines.first&.strip}); " \
                  "the certificate served stays; next try in #{delay} s")
        delay
      end

      # Seconds until cert is due for an order (0 or less: now). The placeholder and a
      # certificate for other names are due at once.
      def due_in(cert)
        return 0 if cert.nil? || cert.issuer.to_der == cert.subject.to_der || !covers?(cert)

        lifetime = cert.not_after - cert.not_before
        window = [RENEW_DAYS * 86_400, lifetime / 3].min
        cert.not_after - window - Time.now
      end

      def covers?(cert)
        san = cert.extensions.find { |e| e.oid == "subjectAltName" }
        names = san ? san.value.split(",").map { |n| n.strip.delete_prefix("DNS:").downcase } : []
        (@names - names).empty?
      end

      # The account (RFC 8555 §7.3: asking again with the same key finds it), once a process.
      def client
        @client ||= begin
          ssl = @ca_file ? { ca_file: @ca_file } : {}
          c = ::Acme::Client.new(private_key: @store.account_key, directory: @directory,
                                 connection_options: { ssl: ssl, request: { timeout: 30 } },
                                 bad_nonce_retry: BAD_NONCE_RETRIES)
          c.new_account(contact: @email ? ["mailto:#{@email}"] : [], terms_of_service_agreed: true)
          c
        end
      end
    end
  end
end
