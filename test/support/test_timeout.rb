# frozen_string_literal: true

require "minitest"
require "timeout"

# A timeout on every test, so a hang fails instead of stalling CI. Prepended to Minitest::Test
# by test/helper.rb and test/conformance/helper.rb; a test class may shorten its limit by
# defining time_limit_seconds.
module UpTestTimeout
  # Raised inside a test that runs too long, so minitest records it as that test's error.
  class TestTookTooLong < Timeout::Error; end

  LIMIT = Integer(ENV.fetch("UP_TEST_TIMEOUT", "60"))

  def time_limit_seconds
    LIMIT
  end

  def time_it(&block)
    t0 = Minitest.clock_time
    Timeout.timeout(time_limit_seconds, TestTookTooLong, &block)
  ensure
    self.time = Minitest.clock_time - t0
  end
end
