# frozen_string_literal: true

require "fileutils"
require "tmpdir"

module Up
  # The throw-away certificate of `-s` in development with neither -c nor -k: a self-signed
  # EC P-256 certificate for localhost, 127.0.0.1 and ::1, made with Ruby's OpenSSL and kept
  # for this user in the temporary directory (up-dev-UID/, mode 0700), so a browser told to
  # trust it once keeps trusting it across restarts until it nears its end (VALID_DAYS). Up::TLSSetup
  # asks for it; it is never used outside the development environment.
  class DevCertificate
    VALID_DAYS = 30
    # A certificate this close to its end is made again.
    RENEW_DAYS = 2
    NAMES = "DNS:localhost,IP:127.0.0.1,IP:0:0:0:0:0:0:0:1"

    attr_reader :cert_file, :key_file

    def initialize(dir = File.join(Dir.tmpdir, "up-dev-#{Process.uid}"))
      @dir = dir
      @cert_file = File.join(dir, "localhost.crt")
      @key_file = File.join(dir, "localhost.key")
    end

    # Makes the files unless usable ones are there. Returns self; raises SystemCallError when
    # the directory cannot be written.
    def ensure!
      # Loaded here, not with the file: a server that never makes a certificate keeps
      # OpenSSL's objects out of its heap, which every garbage collection marks.
      require "openssl"
      make unless usable?
      self
    end

    private

    def usable?
      return false unless File.owned?(@dir) && (File.stat(@dir).mode & 0o077).zero?

      cert = OpenSSL::X509::Certificate.new(File.read(@cert_file))
      key = OpenSSL::PKey.read(File.read(@key_file))
      cert.check_private_key(key) && cert.not_after > Time.now + (RENEW_DAYS * 86_400)
    rescue SystemCallError, OpenSSL::OpenSSLError
      false
    end

    def make
      FileUtils.mkdir_p(@dir, mode: 0o700)
      File.chmod(0o700, @dir)
      key = OpenSSL::PKey::EC.generate("prime256v1")
      cert = certificate(key)
      File.open(@key_file, File::WRONLY | File::CREAT | File::TRUNC, 0o600) { |f| f.write(key.to_pem) }
      File.write(@cert_file, cert.to_pem)
    end

    def certificate(key)
      cert = OpenSSL::X509::Certificate.new
      cert.version = 2
      cert.serial = OpenSSL::BN.rand(63)
      cert.subject = cert.issuer = OpenSSL::X509::Name.parse("/CN=localhost/O=UP! development")
      cert.public_key = key
      cert.not_before = Time.now - 60
      cert.not_after = Time.now + (VALID_DAYS * 86_400)
      ext = OpenSSL::X509::ExtensionFactory.new(cert, cert)
      cert.add_extension(ext.create_extension("subjectAltName", NAMES))
      cert.add_extension(ext.create_extension("basicConstraints", "CA:FALSE", true))
      cert.add_extension(ext.create_extension("extendedKeyUsage", "serverAuth"))
      cert.sign(key, OpenSSL::Digest.new("SHA256"))
      cert
    end
  end
end
