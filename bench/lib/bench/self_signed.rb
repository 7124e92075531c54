# frozen_string_literal: true

require "openssl"

module Bench
  # A self-signed ECDSA P-256 certificate for localhost and 127.0.0.1, made at run time for the
  # TLS benchmarks (bench/tls, bench/h2): no key is ever committed.
  module SelfSigned
    # Writes DIR/cert.pem and DIR/key.pem; returns [cert_file, key_file].
    def self.write(dir)
      key = OpenSSL::PKey::EC.generate("prime256v1")
      cert = OpenSSL::X509::Certificate.new
      cert.version = 2
      cert.serial = 1
      cert.subject = cert.issuer = OpenSSL::X509::Name.parse("/CN=localhost")
      cert.public_key = key
      cert.not_before = Time.now - 60
      cert.not_after = Time.now + 86_400
      ext = OpenSSL::X509::ExtensionFactory.new(cert, cert)
      cert.add_extension(ext.create_extension("subjectAltName", "DNS:localhost,IP:127.0.0.1"))
      cert.sign(key, OpenSSL::Digest.new("SHA256"))
      [File.join(dir, "cert.pem"), File.join(dir, "key.pem")].tap do |cert_file, key_file|
        File.write(cert_file, cert.to_pem)
        File.write(key_file, key.private_to_pem)
      end
    end
  end
end
