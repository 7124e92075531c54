# frozen_string_literal: true

require_relative "helper"

# Rack::Utils and Rack::Headers under Opal print what they print on MRI.
class TestOpalRackUtils < Minitest::Test
  def test_query_parsing_building_and_escaping_match_mri
    out = assert_same_on_opal_and_mri("utils_query")
    assert_includes out, %("e"=>"été")
  end

  def test_cookies_ranges_statuses_and_media_types_match_mri
    assert_same_on_opal_and_mri("utils_misc")
  end

  def test_headers_downcase_keys_like_mri
    assert_same_on_opal_and_mri("headers")
  end
end
