# frozen_string_literal: true

require_relative "helper"

# multipart/form-data under Opal (Rack's parser patched at build time, Tempfile on Node's fs):
# fields, UTF-8 names, uploaded bytes above 0x7f, filename*, errors, and MockRequest's
# Generator, all as on MRI.
class TestOpalRackMultipart < Minitest::Test
  def test_multipart_fields_and_files_match_mri
    out = assert_same_on_opal_and_mri("multipart")
    assert_includes out, "[137, 80, 78, 71, 0, 255, 254, 128, 195, 169, 13, 10, 45, 45]"
  end
end
