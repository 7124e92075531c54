# frozen_string_literal: true

require "fileutils"
require "securerandom"

module Up
  module Acme
    # The --acme-dir: what ACME needs kept across restarts and what the workers read, all as
    # files, so that no process has to ask another. Up::Launcher creates it before the binds
    # (#prepare! makes the directories and a placeholder certificate when there is none yet);
    # Up::TLSSettings serves #cert_file and #key_file; the static handler answers HTTP-01 from
    # #http_dir, the engine TLS-ALPN-01 from #alpn_dir; Up::Acme::Renewer writes them all. Every
    # file is mode 0600 and replaced by a rename, so a reader sees the old file or the new one.
    #
    #   account.key             the ACME account's key (EC P-256)
    #   certificate.pem         the certificate, then its chain
    #   certificate.key         its key
    #   http-01/TOKEN           a pending HTTP-01 answer
    #   tls-alpn-01/NAME.pem    a pending TLS-ALPN-01 certificate and its key
    class Store
      attr_reader :dir, :cert_file, :key_file, :account_key_file, :http_dir, :alpn_dir

      def initialize(dir)
        @dir = File.expand_path(dir)
        @cert_file = File.join(@dir, "certificate.pem")
        @key_file = File.join(@dir, "certificate.key")
        @account_key_file = File.join(@dir, "account.key")
        @http_dir = File.join(@dir, "http-01")
        @alpn_dir = File.join(@dir, "tls-alpn-01")
      end

      # Makes the directories (mode 0700) and, when no certificate is there yet, a self-signed
      # placeholder for the names. Returns true when it made one. Raises SystemCallError.
      def prepare!(names)
        [@dir, @http_dir, @alpn_dir].each do |d|
          FileUtils.mkdir_p(d, mode: 0o700)
          File.chmod(0o700, d)
        end
        return false if File.file?(@cert_file) && File.file?(@key_file)

        key = OpenSSL::PKey::EC.generate("prime256v1")
        write_certificate(SelfSigned.new(names, key).certificate.to_pem, key.to_pem)
        true
      end

      # The certificate served now, or nil when it does not load.
      def certificate
        OpenSSL::X509::Certificate.new(File.read(@cert_file))
      rescue SystemCallError, OpenSSL::X509::CertificateError
        nil
      end

      # The account key, made and kept on first use.
      def account_key
        return OpenSSL::PKey.read(File.read(@account_key_file)) if File.file?(@account_key_file)

        key = OpenSSL::PKey::EC.generate("prime256v1")
        write(@account_key_file, key.to_pem)
        key
      end

      # The certificate chain and its key, key first: a reload between the two renames finds
      # a key that does not match and keeps the old pair (Up::TLSSetup#reload).
      def write_certificate(chain_pem, key_pem)
        write(@key_file, key_pem)
        write(@cert_file, chain_pem)
      end

      def write_http_answer(token, content)
        write(File.join(@http_dir, token), content)
      end

      def write_alpn_certificate(name, pem)
        write(File.join(@alpn_dir, "#{name}.pem"), pem)
      end

      # Removes the answers of a finished order.
      def clear_challenges
        [@http_dir, @alpn_dir].each do |d|
          Dir.children(d).each { |f| File.delete(File.join(d, f)) }
        end
      rescue SystemCallError
        nil
      end

      private

      def write(path, content)
        tmp = "#{path}.#{SecureRandom.hex(4)}.tmp"
        File.open(tmp, File::WRONLY | File::CREAT | File::EXCL, 0o600) { |f| f.write(content) }
        File.rename(tmp, path)
      ensure
        File.delete(tmp) if tmp && File.exist?(tmp)
      end
    end
  end
end
