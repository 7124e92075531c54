# frozen_string_literal: true

require_relative "helper"

# Rack::Request under Opal: params, cookies, host and forwarding as on MRI.
class TestOpalRackRequest < Minitest::Test
  def test_request_params_cookies_host_and_forwarding_match_mri
    out = assert_same_on_opal_and_mri("request")
    assert_includes out, %({"sid"=>"abc", "theme"=>"dark mode"})
  end
end
