# frozen_string_literal: true

require_relative "helper"

# Rack::Lint (Rack's own file, its two byte regexps patched at build time) passes good apps
# and rejects bad responses and envs with the messages MRI gives.
class TestOpalRackLint < Minitest::Test
  def test_lint_passes_good_apps_and_catches_bad_ones_like_mri
    out = assert_same_on_opal_and_mri("lint")
    assert_includes out, %(["ok", 200)
    assert_includes out, %(["lint", "uppercase character in header name: Content-Type"])
  end
end
