# frozen_string_literal: true
# backtick_javascript: true

require 'rack_compat/bytes'

# Digest on Node's crypto module: Opal has no Digest, and Rack::ETag hashes bodies with
# Digest::SHA256. Each class accumulates a Node Hash; `digest` works on a copy, so a digest
# can be read and then updated again, as on MRI.
module Digest
  class Base
    def self.digest(str) = new.update(str).digest
    def self.hexdigest(str) = new.update(str).hexdigest
    def self.base64digest(str) = new.update(str).base64digest

    def initialize
      reset
    end

    def reset
      @hash = `require('crypto').createHash(#{self.class::ALGORITHM})`
      self
    end

    def update(str)
      `#{@hash}.update(#{RackCompat::Bytes.to_buffer(str)})`
      self
    end
    alias << update

    def digest(str = nil)
      return self.class.digest(str) if str

      RackCompat::Bytes.from_buffer(`#{@hash}.copy().digest()`)
    end

    def hexdigest(str = nil)
      return self.class.hexdigest(str) if str

      `#{@hash}.copy().digest('hex')`
    end

    def base64digest(str = nil)
      return self.class.base64digest(str) if str

      `#{@hash}.copy().digest('base64')`
    end

    def to_s = hexdigest
  end

  class MD5 < Base; ALGORITHM = 'md5'; end
  class SHA1 < Base; ALGORITHM = 'sha1'; end
  class SHA256 < Base; ALGORITHM = 'sha256'; end
  class SHA384 < Base; ALGORITHM = 'sha384'; end
  class SHA512 < Base; ALGORITHM = 'sha512'; end
end
