# frozen_string_literal: true

module Up
  module Acme
    # The two self-signed certificates ACME needs: the placeholder a name is served with
    # until its first certificate comes (Up::Acme::Store), and the TLS-ALPN-01 challenge
    # certificate (RFC 8737 §3: the name alone, and the critical acmeIdentifier extension
    # holding the SHA-256 of the key authorization; Up::Acme::Order).
    class SelfSigned
      # id-pe-acmeIdentifier (RFC 8737 §6.1).
      ACME_IDENTIFIER = "1.3.6.1.5.5.7.1.31"
      # A placeholder lives until the first certificate replaces it; a challenge certificate
      # only for its validation, but the validity is the CA's to check, not ours.
      VALID_DAYS = 7

      # names: the DNS names, the first also the subject's CN; key: its OpenSSL::PKey.
      def initialize(names, key, key_authorization: nil)
        @names = names
        @key = key
        @key_authorization = key_authorization
      end

      def certificate
        cert = OpenSSL::X509::Certificate.new
        cert.version = 2
        cert.serial = OpenSSL::BN.rand(63)
        cert.subject = cert.issuer = OpenSSL::X509::Name.new([["CN", @names.first]])
        cert.public_key = @key
        cert.not_before = Time.now - 60
        cert.not_after = Time.now + (VALID_DAYS * 86_400)
        ext = OpenSSL::X509::ExtensionFactory.new(cert, cert)
        cert.add_extension(ext.create_extension("subjectAltName", @names.map { |n| "DNS:#{n}" }.join(",")))
        cert.add_extension(acme_identifier) if @key_authorization
        cert.sign(@key, OpenSSL::Digest.new("SHA256"))
        cert
      end

      private

      def acme_identifier
        digest = OpenSSL::Digest.digest("SHA256", @key_authorization)
        OpenSSL::X509::Extension.new(ACME_IDENTIFIER, OpenSSL::ASN1::OctetString.new(digest).to_der, true)
      end
    end
  end
end
