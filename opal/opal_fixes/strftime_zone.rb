# frozen_string_literal: true

# strftime's %z, %:z and %::z for a time at UTC (or in a zone at offset zero): MRI writes
# +0000, Opal wrote -0000, its sign test being "is the offset below zero". Rack::CommonLogger's
# lines carry it, so every access-log line of a Node runtime on a UTC machine said -0000, a
# form RFC 3339 §4.3 keeps for "the offset is unknown". Other offsets keep Opal's answer,
# which is right.
class Time
  alias __opal_strftime strftime

  ZERO_OFFSETS = { "" => "+0000", ":" => "+00:00", "::" => "+00:00:00" }.freeze
  private_constant :ZERO_OFFSETS

  def strftime(format)
    return __opal_strftime(format) unless format.include?("z") && utc_offset.zero?

    __opal_strftime(format.gsub(/%%|%(:{0,2})z/) { |m| m == "%%" ? m : ZERO_OFFSETS.fetch(Regexp.last_match(1)) })
  end
end
