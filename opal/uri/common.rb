# frozen_string_literal: true
# backtick_javascript: true

# URI's module functions for application/x-www-form-urlencoded data, with MRI's byte rules.
require 'rack_compat/bytes'

module URI
  class Error < StandardError; end
  class InvalidURIError < Error; end
  class InvalidComponentError < Error; end
  class BadURIError < Error; end

  def self.__bytes(str)
    RackCompat::Bytes.bytes(str)
  end

  def self.to_buffer(str)
    RackCompat::Bytes.to_buffer(str)
  end

  def self.__string(bytes, enc)
    RackCompat::Bytes.string(bytes, enc)
  end

  WWW_COMPONENT_ALL_SAFE = /\A[*\-.0-9A-Z_a-z]*\z/

  # MRI's byte rules (TBLENCWWWCOMP_): '*', '-', '.', '_' and ASCII letters and digits are
  # kept, a space becomes '+', every other byte %XX. One loop over the bytes in JavaScript:
  # Rack escapes every cookie value with it (a session cookie is a few hundred bytes).
  def self.encode_www_form_component(str, enc = nil)
    str = str.to_s
    return `str.toString()` if WWW_COMPONENT_ALL_SAFE.match?(str) # fast path: nothing to escape

    %x{
      var bytes = #{to_buffer(str)}, out = '', b;
      for (var i = 0; i < bytes.length; i++) {
        b = bytes[i];
        if (b === 32) out += '+';
        else if (b === 42 || b === 45 || b === 46 || b === 95 || (b >= 48 && b <= 57) ||
                 (b >= 65 && b <= 90) || (b >= 97 && b <= 122)) out += String.fromCharCode(b);
        else out += (b < 16 ? '%0' : '%') + b.toString(16).toUpperCase();
      }
      return out;
    }
  end

  # Fast paths for text decoded to UTF-8 (every Rack param key and value comes here): no %
  # means only '+' to replace, and JS decodeURIComponent agrees with the byte rules whenever
  # the escapes form valid UTF-8 (it throws otherwise, and the byte path runs).
  def self.decode_www_form_component(str, enc = Encoding::UTF_8)
    str = str.to_s
    raise ArgumentError, "invalid %-encoding (#{str})" if /%(?![0-9a-fA-F]{2})/.match?(str)

    utf8 = enc == Encoding::UTF_8 || enc.to_s.upcase == 'UTF-8'
    if utf8 && !RackCompat::Bytes.binary?(str)
      fast = `(function(s) {
        s = s.replace(/\+/g, ' ');
        if (s.indexOf('%') < 0) return s;
        try { return decodeURIComponent(s) } catch (e) { return null }
      })(str.toString())`
      return fast unless `#{fast} === null`
    end
    __string(__percent_decode(str.tr('+', ' ')), enc)
  end

  # Bytes of `str` with each %XX replaced by its byte.
  def self.__percent_decode(str)
    bytes = __bytes(str)
    out = []
    i = 0
    n = bytes.length
    while i < n
      b = bytes[i]
      if b == 37 && __hex?(bytes[i + 1]) && __hex?(bytes[i + 2])
        out << `parseInt(String.fromCharCode(bytes[i + 1], bytes[i + 2]), 16)`
        i += 3
      else
        out << b
        i += 1
      end
    end
    out
  end

  def self.__hex?(b)
    !b.nil? && ((b >= 48 && b <= 57) || (b >= 65 && b <= 70) || (b >= 97 && b <= 102))
  end

  def self.encode_www_form(enum, enc = nil)
    enum.map do |k, v|
      if v.nil?
        encode_www_form_component(k)
      elsif v.respond_to?(:to_ary)
        v.to_ary.map do |w|
          w.nil? ? encode_www_form_component(k) : "#{encode_www_form_component(k)}=#{encode_www_form_component(w)}"
        end.join('&')
      else
        "#{encode_www_form_component(k)}=#{encode_www_form_component(v)}"
      end
    end.join('&')
  end

  def self.decode_www_form(str, enc = Encoding::UTF_8, separator: '&', use__charset_: false, isindex: false)
    return [] if str.empty?

    str.split(separator).map do |pair|
      key, val = pair.split('=', 2)
      [decode_www_form_component(key, enc), decode_www_form_component(val || '', enc)]
    end
  end
end
