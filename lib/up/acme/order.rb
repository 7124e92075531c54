# frozen_string_literal: true

module Up
  module Acme
    # One certificate order (RFC 8555 §7.4), through the acme-client gem: a new order for the
    # names, each pending authorization answered by one challenge (HTTP-01 files for the
    # static handler, or TLS-ALPN-01 certificates for the engine, both in the Up::Acme::Store),
    # the CSR of a fresh key, then the chain and the key written to the store. Made and run by
    # Up::Acme::Renewer on its thread; owns nothing past #run.
    class Order
      # The order gives up past this (the CA validates in seconds).
      TIMEOUT = 120
      # Between two looks at a pending authorization or a processing order.
      POLL = 0.5

      # An order the CA turned down: its problem, one line.
      class Failed < StandardError; end

      # client: an Acme::Client with its account; challenge: "http-01" or "tls-alpn-01".
      def initialize(client, store, names, challenge)
        @client = client
        @store = store
        @names = names
        @challenge = challenge
      end

      # Raises Failed, or the gem's and its HTTP library's errors.
      def run
        deadline = now + TIMEOUT
        order = @client.new_order(identifiers: @names)
        order.authorizations.each { |authz| authorize(authz, deadline) }
        key = OpenSSL::PKey::EC.generate("prime256v1")
        csr = ::Acme::Client::CertificateRequest.new(private_key: key, common_name: @names.first, names: @names)
        order.finalize(csr: csr)
        wait(deadline, "the order") { order.reload && order.status != "processing" }
        raise Failed, "the order is #{order.status}: #{order.error&.fetch("detail", nil)}" unless order.status == "valid"

        @store.write_certificate(order.certificate, key.to_pem)
      ensure
        @store.clear_challenges
      end

      private

      def authorize(authz, deadline)
        return if authz.status == "valid"

        challenge = answer(authz)
        challenge.request_validation
        wait(deadline, authz.domain) { challenge.reload && challenge.status != "pending" && challenge.status != "processing" }
        return if challenge.status == "valid"

        raise Failed, "#{authz.domain}: #{@challenge} is #{challenge.status}: #{challenge.error&.fetch("detail", nil)}"
      end

      # The challenge of our type, its answer in place.
      def answer(authz)
        raw = authz.to_h[:challenges].find { |c| c["type"] == @challenge }
        raise Failed, "#{authz.domain}: the CA offers no #{@challenge} challenge" unless raw

        challenge = authz.challenges.find { |c| c.url == raw["url"] }
        if @challenge == "http-01"
          @store.write_http_answer(challenge.token, challenge.key_authorization)
        else
          key = OpenSSL::PKey::EC.generate("prime256v1")
          cert = SelfSigned.new([authz.domain], key, key_authorization: challenge.key_authorization).certificate
          @store.write_alpn_certificate(authz.domain, cert.to_pem + key.to_pem)
        end
        challenge
      end

      def wait(deadline, what)
        until yield
          raise Failed, "#{what}: no answer from the CA in #{TIMEOUT} s" if now > deadline

          sleep POLL
        end
      end

      def now
        Process.clock_gettime(Process::CLOCK_MONOTONIC)
      end
    end
  end
end
