# frozen_string_literal: true
# backtick_javascript: true

require 'corelib/random/formatter'

# SecureRandom on Node's crypto module, in place of Opal's stdlib file (the same interface:
# Random::Formatter over `bytes` and `gen_random`). Opal's asks crypto.getRandomValues for
# every call, and a Sinatra request makes five (rack-session's id, rack-protection's CSRF
# token, the cookie's salt, IV and padding), each a call into OpenSSL for a few bytes. Here
# one randomFillSync fills a pool of POOL_SIZE bytes and calls take their bytes from it in
# turn, as Node's crypto.randomUUID does with its cache: a byte is handed out once, and the
# pool is filled again when too few are left. A request larger than the pool gets its own.
module SecureRandom
  extend ::Random::Formatter

  POOL_SIZE = 4096

  %x{
    var crypto = require('crypto');
    var pool = Buffer.alloc(#{POOL_SIZE});
    var used = #{POOL_SIZE};

    // count random bytes as a String of one char per byte.
    function up_random_bytes(count) {
      if (count > #{POOL_SIZE}) return crypto.randomBytes(count).toString('latin1');
      if (used + count > #{POOL_SIZE}) {
        crypto.randomFillSync(pool);
        used = 0;
      }
      var out = pool.toString('latin1', used, used + count);
      used += count;
      return out;
    }
  }

  def self.bytes(count = nil)
    gen_random(count)
  end

  def self.gen_random(count = nil)
    count = ::Random._verify_count(count)
    `up_random_bytes(#{count})`.encode('ASCII-8BIT')
  end

  # Opal's Random::Formatter hands padding to Base64.urlsafe_encode64 as a positional
  # argument, where Base64 takes a keyword (ArgumentError); any truthy padding pads, as on
  # MRI 3.1, whose padding is positional too.
  def self.urlsafe_base64(count = nil, padding = false)
    ::Base64.urlsafe_encode64(random_bytes(count), padding: padding ? true : false)
  end
end
