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

  def self.__string(bytes, enc)
    RackCompat::Bytes.string(bytes, enc)
  end

  # Characters left alone by encode_www_form_component (MRI's TBLENCWWWCOMP_ complement).
  WWW_COMPONENT_SAFE = /[*\-.0-9A-Z_a-z]/

  def self.encode_www_form_component(str, enc = nil)
    out = __bytes(str).map do |b|
      c = `String.fromCharCode(b)`
      if b == 32
        '+'
      elsif b < 128 && WWW_COMPONENT_SAFE.match?(c)
        c
      else
        '%' + b.to_s(16).upcase.rjust(2, '0')
      end
    end
    out.join
  end

  def self.decode_www_form_component(str, enc = Encoding::UTF_8)
    str = str.to_s
    raise ArgumentError, "invalid %-encoding (#{str})" if /%(?![0-9a-fA-F]{2})/.match?(str)

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
