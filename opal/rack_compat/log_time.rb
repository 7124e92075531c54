# frozen_string_literal: true
# backtick_javascript: true

module RackCompat
  # The time of an access-log line (Rack::CommonLogger's "%d/%b/%Y:%H:%M:%S %z"), made once
  # a second: Time#strftime costs tens of microseconds on Opal, and CommonLogger formats it
  # for every request. Rack's file calls it through a build-time patch
  # (lib/up/node/rewriters/gem_patches.rb).
  module LogTime
    def self.now
      second = `Math.floor(Date.now() / 1000)`
      return @text if @second == second

      @second = second
      @text = Time.at(second).strftime('%d/%b/%Y:%H:%M:%S %z')
    end
  end
end
