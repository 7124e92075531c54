# frozen_string_literal: true

require_relative "helper"

# Dates (ConditionalGet, gzip mtime), query limits, rack.input#gets/each through Lint and
# raw UTF-8 form bytes under Opal, as on MRI.
class TestOpalRackEdges < Minitest::Test
  def test_dates_limits_and_byte_handling_match_mri
    out = assert_same_on_opal_and_mri("edges")
    assert_includes out, %(["conditional_get", "#{'Wed, 21 Oct 2015 07:28:00 GMT'}", 304, ""])
  end
end
