# frozen_string_literal: true

require_relative "helper"

# Rack's common middleware under Opal, driven by Rack::MockRequest, print what they print
# on MRI: ContentLength, ContentType, Head, MethodOverride, ETag (Digest on Node's crypto),
# ConditionalGet, Deflater (Zlib on Node's zlib), CommonLogger, ShowExceptions, ShowStatus,
# Cascade, Runtime, Events, BodyProxy, Static, Files and Recursive.
class TestOpalRackMiddleware < Minitest::Test
  def test_common_middleware_match_mri
    out = assert_same_on_opal_and_mri("middleware")
    assert_includes out, %(["deflater", 200, "gzip", "Accept-Encoding", true, [31, 139, 8], true])
    assert_includes out, %(["files_range", 206)
  end
end
