# frozen_string_literal: true

require_relative "helper"

# Rack::Builder, Rack::URLMap and Rack::Response under Opal behave as on MRI.
class TestOpalRackBuilder < Minitest::Test
  def test_builder_use_map_run_and_urlmap_route_like_mri
    out = assert_same_on_opal_and_mri("builder_urlmap")
    assert_includes out, %(["/api/v1/users/1", 200)
  end

  def test_response_cookies_redirects_and_finish_match_mri
    assert_same_on_opal_and_mri("response")
  end
end
