# frozen_string_literal: true

# Where a runtime behaves differently from what the conformance suite asserts: runtime =>
# "TestClass#test_name" => why. Each listed test still runs and must still fail on that
# runtime (a fix shows up as a failure asking to remove the entry); test_known_gaps.rb checks
# that every entry names a test. The README's "Known gaps of the conformance suite" lists the
# same entries.
module Conformance
  KNOWN_GAPS = {
    "up_ruby" => {},
    "up_node" => {
      "TestConformanceLint#test_an_app_wrapped_in_rack_lint_is_served" =>
        "Rack::Lint does not load on Opal: opal/rack/lint.rb builds a regexp from " \
        "Utils::URI_PARSER.make_regexp, which the URI shim (opal/uri/rfc2396_parser.rb) lacks, so the app " \
        "stops with a NoMethodError; the other apps run without Lint on up_node",
      "TestConformanceErrors#test_invalid_response_body_part_not_a_string_is_a_500_and_the_server_keeps_serving" =>
        "up_node sends a body part that is not a String (an Integer) as its to_s, with a 200, instead of " \
        "refusing the response"
    }
  }.freeze
end
