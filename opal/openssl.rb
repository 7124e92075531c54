# frozen_string_literal: true
# backtick_javascript: true

require 'rack_compat/bytes'
require 'securerandom'

# The slice of OpenSSL that Roda's sessions plugin uses, on Node's crypto module: Opal has
# no OpenSSL. The plugin encrypts each session cookie with AES-256-CTR and signs it with
# HMAC-SHA-256, so a cookie made on MRI opens here and the other way round. Keys, ivs and
# data are taken as bytes (either string kind, RackCompat::Bytes.to_buffer); results are
# binary strings. Nothing else of OpenSSL is here.
#
# Node's crypto module, and what it says of each cipher name, are looked up once: a session
# cookie makes a cipher on every request, and getCiphers() copies its list on each call.
%x{
  var crypto = require('crypto');
  var cipher_infos = new Map();
  Opal.up_cipher_info = function(name) {
    if (!cipher_infos.has(name)) cipher_infos.set(name, crypto.getCiphers().includes(name) ? crypto.getCipherInfo(name) : null);
    return cipher_infos.get(name);
  };
  Opal.up_crypto = crypto;
}

module OpenSSL
  class OpenSSLError < StandardError; end

  # OpenSSL::Digest::SHA256.new names the hash for HMAC; only its name is used.
  class Digest
    attr_reader :name

    def initialize(name)
      @name = name
    end

    class SHA1 < Digest
      def initialize = super('SHA1')
    end

    class SHA256 < Digest
      def initialize = super('SHA256')
    end
  end

  module HMAC
    def self.digest(digest, key, data)
      RackCompat::Bytes.from_buffer(node_hmac(digest, key, data))
    end

    def self.hexdigest(digest, key, data)
      `#{node_hmac(digest, key, data)}.toString('hex')`
    end

    def self.node_hmac(digest, key, data)
      name = digest.is_a?(Digest) ? digest.name : digest.to_s
      %x{
        return Opal.up_crypto.createHmac(#{name.downcase}, #{RackCompat::Bytes.to_buffer(key)})
          .update(#{RackCompat::Bytes.to_buffer(data)}).digest();
      }
    end
  end

  # One cipher, as MRI's: choose encrypt or decrypt, set key and iv, then update and final.
  # Node's Cipheriv needs the key and iv up front, so it is made at the first update.
  class Cipher
    class CipherError < OpenSSLError; end

    def initialize(name)
      @name = name.to_s.downcase
      info = `Opal.up_cipher_info(#{@name})`
      raise CipherError, "unsupported cipher algorithm (#{name})" if `info === null`

      @key_len = `info.keyLength`
      @iv_len = `info.ivLength || 0`
      @mode = :encrypt
    end

    def encrypt
      @mode = :encrypt
      self
    end

    def decrypt
      @mode = :decrypt
      self
    end

    def key=(key)
      raise ArgumentError, "key must be #{@key_len} bytes" unless key.bytesize == @key_len

      @key = RackCompat::Bytes.to_buffer(key)
    end

    def iv=(iv)
      raise ArgumentError, "iv must be #{@iv_len} bytes" unless iv.bytesize == @iv_len

      @iv = RackCompat::Bytes.to_buffer(iv)
    end

    # The iv length of an AEAD cipher (GCM takes 12 bytes, rack-session's sessions set it).
    def iv_len=(length)
      @iv_len = length
    end

    # GCM's additional authenticated data, given before the first update.
    def auth_data=(data)
      raise CipherError, 'auth_data= after update' if @node_cipher

      @auth_data = RackCompat::Bytes.to_buffer(data)
    end

    # The tag GCM computed, after final (encrypt).
    def auth_tag(length = 16)
      raise CipherError, 'auth_tag before final' unless @node_cipher

      RackCompat::Bytes.from_buffer(`#{@node_cipher}.getAuthTag().subarray(0, #{length})`)
    end

    # The tag to check, before final (decrypt).
    def auth_tag=(tag)
      @auth_tag = RackCompat::Bytes.to_buffer(tag)
    end

    # A fresh random iv, set and returned, as MRI's. Its bytes come from SecureRandom's pool
    # (filled by the same generator as crypto.randomBytes, each byte handed out once): a
    # session cookie takes an iv on every response, and a call into OpenSSL for 12 bytes
    # cost more than the rest of the cipher's set-up.
    def random_iv
      iv = ::SecureRandom.random_bytes(@iv_len)
      self.iv = iv
      iv
    end

    def update(data)
      RackCompat::Bytes.from_buffer(`#{node_cipher}.update(#{RackCompat::Bytes.to_buffer(data)})`)
    end

    # A GCM tag that does not match fails here, as a CipherError (MRI's too).
    def final
      cipher = node_cipher
      RackCompat::Bytes.from_buffer(`(function() { try { return cipher.final() } catch (e) { return null } })()` ||
                                    raise(CipherError, 'final failed'))
    end

    private

    def node_cipher
      raise CipherError, 'key not set' unless @key

      @node_cipher ||= begin
        cipher = if @mode == :encrypt
                   `Opal.up_crypto.createCipheriv(#{@name}, #{@key}, #{@iv})`
                 else
                   `Opal.up_crypto.createDecipheriv(#{@name}, #{@key}, #{@iv})`
                 end
        `#{cipher}.setAuthTag(#{@auth_tag})` if @auth_tag
        `#{cipher}.setAAD(#{@auth_data})` if @auth_data
        cipher
      end
    end
  end
end
