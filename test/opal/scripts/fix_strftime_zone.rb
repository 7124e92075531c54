# frozen_string_literal: true

# strftime's zone offset at zero, and elsewhere (Rack::CommonLogger's format at the end).
utc = Time.at(1_700_000_000).utc
p utc.strftime("%z"), utc.strftime("%:z"), utc.strftime("%::z"), utc.strftime("%%z %z %%%z")
p Time.new(2026, 11, 26, 13, 0, 0, "+00:00").strftime("%H:%M %z")
p Time.new(2026, 11, 26, 13, 0, 0, "+01:00").strftime("%z %:z")
p Time.new(2026, 11, 26, 13, 0, 0, "-05:30").strftime("%z %:z")
p utc.strftime("%d/%b/%Y:%H:%M:%S %z")
