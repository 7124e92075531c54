# frozen_string_literal: true

require_relative "dev_certificate"
require_relative "start_error"
require_relative "acme/store"

module Up
  # What each HTTPS bind serves, from the options: its certificate is the bind's
  # cert= and key= (ssl://), else -c and -k; -a (ca=) adds chain certificates; the config
  # file's tls_host entries add certificates picked by host name (SNI); --acme-domain serves the
  # certificate of its Up::Acme::Store where no other is given, and the engine answers
  # TLS-ALPN-01 from that store; a key with a passphrase
  # takes it from --key-password-command (key_password_command=); in development a bind with
  # neither certificate nor key serves an Up::DevCertificate. Up::TLSSetup (up_ruby) and
  # Up::Node::Launcher (up_node) create one and ask it for each TLS bind. Paths are made
  # absolute here: a reload or a hot restart may run in another directory.
  class TLSSettings
    def initialize(options, log:)
      @options = options
      @log = log
    end

    # { cert_file:, key_file:, ca_file:, key_password_command:, hosts: [{ host:, cert_file:,
    # key_file:, ca_file: }] } for a TLS bind, frozen. Raises StartError naming what is missing.
    def for(bind)
      own = bind.tls
      cert = own[:cert_file] || @options[:cert_file]
      key = own[:key_file] || @options[:key_file]
      cert, key = acme.cert_file, acme.key_file if cert.nil? && key.nil? && acme
      cert, key = dev_certificate(bind) if cert.nil? && key.nil?
      raise StartError, "#{bind}: HTTPS needs a key for the certificate #{cert}: #{flag(bind, "key", "-k/--key-file")}" unless key
      raise StartError, "#{bind}: HTTPS needs the certificate of the key #{key}: #{flag(bind, "cert", "-c/--cert-file")}" unless cert

      { cert_file: expand(cert), key_file: expand(key), ca_file: expand(own[:ca_file] || @options[:ca_file]),
        key_password_command: own[:key_password_command] || @options[:key_password_command],
        hosts: @options[:tls_hosts].map { |h| host(h) }, acme_challenge_dir: acme&.alpn_dir }.freeze
    end

    # The passphrase settings' command prints (Puma's key_password_command: the output without
    # its line break), or nil when there is no command. Raises StartError when it fails.
    def password(settings)
      command = settings[:key_password_command] or return nil
      out = IO.popen(command, "r", err: File::NULL, &:read)
      raise StartError, "--key-password-command #{command.inspect} failed (#{$?})" unless $?.success?

      out.chomp
    rescue SystemCallError => e
      raise StartError, "--key-password-command #{command.inspect}: #{e.message}"
    end

    private

    # The Up::Acme::Store of --acme-domain, nil without ACME.
    def acme
      return nil if @options[:acme_domains].empty?

      @acme ||= Acme::Store.new(@options[:acme_dir])
    end

    def host(entry)
      entry.merge(cert_file: expand(entry[:cert_file]), key_file: expand(entry[:key_file]),
                  ca_file: expand(entry[:ca_file])).freeze
    end

    def expand(path)
      path && File.expand_path(path)
    end

    def flag(bind, param, option)
      bind.tls.empty? ? option : "#{param}= in #{bind}, or #{option.split("/").first}"
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
  end
end
