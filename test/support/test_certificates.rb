# frozen_string_literal: true

require "fileutils"
require "openssl"
require "tmpdir"

# A throw-away certificate authority for the TLS tests, made with Ruby's OpenSSL when a test
# first asks (no key is ever committed): a CA and the certificates it signs for host names,
# written as PEM files in a temporary directory removed when the process exits. Clients trust
# #ca_file alone, as they would a real CA's.
class TestCertificates
  # cert_file/key_file: PEM paths; cert/key: the OpenSSL objects; chain_file: the PEM of the
  # intermediate CA that signed it (the -a file), or nil when the CA signed it.
  Issued = Struct.new(:cert_file, :key_file, :cert, :key, :chain_file, keyword_init: true)

  def self.ca
    @ca ||= new
  end

  attr_reader :dir, :ca_file, :ca_cert

  def initialize
    @dir = Dir.mktmpdir("up-tls-test-")
    dir = @dir
    owner = Process.pid
    # After minitest has run the tests (a plain at_exit made at load time would run first).
    remove = -> { FileUtils.rm_rf(dir) if Process.pid == owner }
    defined?(Minitest.after_run) ? Minitest.after_run(&remove) : at_exit(&remove)
    @serial = 0
    @ca_key = OpenSSL::PKey::EC.generate("prime256v1")
    @ca_cert = build("/CN=UP! test CA", @ca_key, ca: true)
    @ca_file = write("ca.crt", @ca_cert.to_pem)
  end

  # A certificate for names (the first is the CN; "localhost" also gets 127.0.0.1 and ::1),
  # EC P-256 unless rsa: true; its key encrypted when password is given; self_signed: not
  # signed by the CA (no client trusts it); intermediate: signed by an intermediate CA the
  # CA signed, so a client verifies it only when the server sends the chain. A new key and
  # serial every call.
  def issue(*names, rsa: false, password: nil, self_signed: false, intermediate: false)
    key = rsa ? OpenSSL::PKey::RSA.new(2048) : OpenSSL::PKey::EC.generate("prime256v1")
    issuer = intermediate ? self.intermediate : [@ca_cert, @ca_key]
    cert = build("/CN=#{names.first}", key, names: names, self_signed: self_signed, issuer: issuer)
    base = "#{names.first.tr("*", "_")}-#{@serial}"
    key_pem = password ? key.private_to_pem(OpenSSL::Cipher.new("aes-256-cbc"), password) : key.private_to_pem
    Issued.new(cert_file: write("#{base}.crt", cert.to_pem), key_file: write("#{base}.key", key_pem),
               cert: cert, key: key, chain_file: intermediate ? @intermediate_file : nil)
  end

  # A client context that verifies the server against the CA (and its host name).
  def client_context(**settings)
    ctx = OpenSSL::SSL::SSLContext.new
    ctx.set_params(verify_mode: OpenSSL::SSL::VERIFY_PEER, ca_file: @ca_file)
    settings.each { |name, value| ctx.public_send(:"#{name}=", value) }
    ctx
  end

  private

  # [certificate, key] of the intermediate CA, made once.
  def intermediate
    @intermediate ||= begin
      key = OpenSSL::PKey::EC.generate("prime256v1")
      cert = build("/CN=UP! test intermediate CA", key, ca: true, issuer: [@ca_cert, @ca_key])
      @intermediate_file = write("intermediate.crt", cert.to_pem)
      [cert, key]
    end
  end

  def write(name, pem)
    path = File.join(@dir, name)
    File.write(path, pem)
    path
  end

  # issuer: [certificate, key] of the CA that signs it; nil signs it with its own key (the
  # root CA, a self-signed certificate).
  def build(subject, key, names: [], ca: false, self_signed: false, issuer: nil)
    issuer = nil if self_signed
    cert = OpenSSL::X509::Certificate.new
    cert.version = 2
    cert.serial = (@serial += 1)
    cert.subject = OpenSSL::X509::Name.parse(subject)
    cert.issuer = issuer ? issuer[0].subject : cert.subject
    cert.public_key = key
    cert.not_before = Time.now - 60
    cert.not_after = Time.now + 86_400
    ext = OpenSSL::X509::ExtensionFactory.new(cert, issuer ? issuer[0] : cert)
    if ca
      cert.add_extension(ext.create_extension("basicConstraints", "CA:TRUE", true))
      cert.add_extension(ext.create_extension("keyUsage", "keyCertSign,cRLSign", true))
    else
      cert.add_extension(ext.create_extension("subjectAltName", alt_names(names)))
    end
    cert.sign(issuer ? issuer[1] : key, OpenSSL::Digest.new("SHA256"))
    cert
  end

  def alt_names(names)
    names.flat_map do |name|
      name == "localhost" ? ["DNS:localhost", "IP:127.0.0.1", "IP:0:0:0:0:0:0:0:1"] : ["DNS:#{name}"]
    end.join(",")
  end
end
