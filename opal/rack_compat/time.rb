# frozen_string_literal: true

require 'time'

# Time.httpdate and Time.rfc2822 as parsers, which Opal's time library lacks (it only
# formats). Rack::Deflater reads last-modified with httpdate, Rack::ConditionalGet reads
# if-modified-since with rfc2822, and MockResponse reads cookie expiry. The formats are
# MRI's: RFC 7231 §7.1.1.1 (IMF-fixdate, RFC 850, asctime) for httpdate, RFC 2822 §3.3 for
# rfc2822; anything else raises ArgumentError, as on MRI.
class Time
  MONTHS = %w[jan feb mar apr may jun jul aug sep oct nov dec].freeze
  DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)'
  HTTPDATE_FORMATS = [
    /\A\s*#{DAY},\x20(\d{2})\x20([A-Za-z]{3})\x20(\d{4})\x20(\d{2}):(\d{2}):(\d{2})\x20GMT\s*\z/i,
    /\A\s*(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday),\x20(\d{2})-([A-Za-z]{3})-(\d{2})\x20(\d{2}):(\d{2}):(\d{2})\x20GMT\s*\z/i,
  ].freeze
  ASCTIME = /\A\s*#{DAY}\x20([A-Za-z]{3})\x20+(\d{1,2})\x20(\d{2}):(\d{2}):(\d{2})\x20(\d{4})\s*\z/i
  RFC2822 = /\A\s*(?:#{DAY}\s*,\s*)?(\d{1,2})\s+([A-Za-z]{3})\s+(\d{2,})\s+(\d{2}):(\d{2})(?::(\d{2}))?\s*([-+]\d{4}|UT|GMT|EST|EDT|CST|CDT|MST|MDT|PST|PDT|[A-IK-Z])\s*\z/i
  ZONES = { 'UT' => 0, 'GMT' => 0, 'EST' => -5, 'EDT' => -4, 'CST' => -6, 'CDT' => -5,
            'MST' => -7, 'MDT' => -6, 'PST' => -8, 'PDT' => -7 }.freeze

  def self.__month(name)
    MONTHS.index(name.downcase)&.+(1) or raise ArgumentError, "not RFC 2616 compliant date: #{name.inspect}"
  end

  def self.httpdate(date)
    if (m = HTTPDATE_FORMATS[0].match(date))
      utc(m[3].to_i, __month(m[2]), m[1].to_i, m[4].to_i, m[5].to_i, m[6].to_i)
    elsif (m = HTTPDATE_FORMATS[1].match(date))
      year = m[3].to_i
      year += year < 50 ? 2000 : 1900
      utc(year, __month(m[2]), m[1].to_i, m[4].to_i, m[5].to_i, m[6].to_i)
    elsif (m = ASCTIME.match(date))
      utc(m[6].to_i, __month(m[1]), m[2].to_i, m[3].to_i, m[4].to_i, m[5].to_i)
    else
      raise ArgumentError, "not RFC 2616 compliant date: #{date.inspect}"
    end
  end

  def self.rfc2822(date)
    m = RFC2822.match(date) or raise ArgumentError, "not RFC 2822 compliant date: #{date.inspect}"
    year = m[3].to_i
    year += year < 50 ? 2000 : 1900 if m[3].length < 4
    zone = m[7].upcase
    offset = if zone.start_with?('+', '-')
               sign = zone.start_with?('-') ? -1 : 1
               sign * (zone[1, 2].to_i * 3600 + zone[3, 2].to_i * 60)
             else
               (ZONES[zone] || 0) * 3600
             end
    at(utc(year, __month(m[2]), m[1].to_i, m[4].to_i, m[5].to_i, m[6].to_i).to_i - offset)
  end
  singleton_class.alias_method :rfc822, :rfc2822
end
