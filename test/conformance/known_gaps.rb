# frozen_string_literal: true

# Where a runtime behaves differently from what the conformance suite asserts: runtime =>
# "TestClass#test_name" => why. Each listed test still runs and must still fail on that
# runtime (a fix shows up as a failure asking to remove the entry); test_known_gaps.rb checks
# that every entry names a test, and that the README lists them as gaps_markdown writes them
# (rake test:conformance:gaps prints it).
module Conformance
  # Reasons shared by several entries.
  LLHTTP_REQUEST_LINE = "Node's parser (llhttp) accepts this request line and up_node does not check it " \
                        "again, so the app answers it with a 200"
  LLHTTP_VERSION = "llhttp takes any HTTP/x.y version and Node answers it as HTTP/1.1; up_node does not " \
                   "answer 505, so the app answers it with a 200"
  NODE_HOST = "Node does not check the Host field (RFC 9112 §3.2, RFC 9110 §7.2) and up_node does not " \
              "either, so the app answers it with a 200"

  KNOWN_GAPS = {
    "up_ruby" => {},
    "up_node" => {
      "TestConformanceLint#test_an_app_wrapped_in_rack_lint_is_served" =>
        "Rack::Lint does not load on Opal: opal/rack/lint.rb builds a regexp from " \
        "Utils::URI_PARSER.make_regexp, which the URI shim (opal/uri/rfc2396_parser.rb) lacks, so the app " \
        "stops with a NoMethodError; the other apps run without Lint on up_node",
      "TestConformanceCLI#test_port_in_use_is_one_line_and_status_1" =>
        "up_node logs a 'compiled ...' line first and words the error as Node does: 'cannot listen on " \
        "http://127.0.0.1:PORT: listen EADDRINUSE: address already in use ...', where up_ruby says " \
        "'cannot listen on tcp://127.0.0.1:PORT: Address already in use - bind(2) ...'",
      "TestConformanceErrors#test_invalid_response_body_part_not_a_string_is_a_500_and_the_server_keeps_serving" =>
        "up_node sends a body part that is not a String (an Integer) as its to_s, with a 200, instead of " \
        "refusing the response",
      "TestConformanceResponses#test_early_hints_go_out_as_a_103_before_the_response" =>
        "Node's writeEarlyHints joins an Array value into one comma-separated line (link: a, b) where up_ruby " \
        "sends a line per value, as for the final response",
      "TestConformanceLimits#test_rejects_no_version_with_400" => LLHTTP_REQUEST_LINE,
      "TestConformanceLimits#test_rejects_two_spaces_after_method_with_400" => LLHTTP_REQUEST_LINE,
      "TestConformanceLimits#test_rejects_target_with_fragment_with_400" => LLHTTP_REQUEST_LINE,
      "TestConformanceLimits#test_rejects_asterisk_form_with_get_with_400" => LLHTTP_REQUEST_LINE,
      "TestConformanceLimits#test_rejects_http_2_0_request_line_with_505" => LLHTTP_VERSION,
      "TestConformanceLimits#test_rejects_http_0_9_style_with_505" => LLHTTP_VERSION,
      "TestConformanceLimits#test_rejects_two_host_fields_with_400" => NODE_HOST,
      "TestConformanceLimits#test_rejects_host_with_userinfo_with_400" => NODE_HOST,
      "TestConformanceLimits#test_rejects_host_with_space_with_400" => NODE_HOST,
      "TestConformanceLimits#test_rejects_host_with_non_numeric_port_with_400" => NODE_HOST,
      "TestConformanceLimits#test_rejects_host_with_unclosed_ipv6_with_400" => NODE_HOST,
      "TestConformanceLimits#test_rejects_http_1_1_without_host_with_400" =>
        "Node refuses it itself (its requireHostHeader check) with a bare 400, no content-type and no body, " \
        "before up_node sees the request",
      "TestConformanceLimits#test_rejects_te_unknown_coding_with_501" =>
        "llhttp accepts 'Transfer-Encoding: gzip, chunked' and decodes only the chunked framing; up_node does " \
        "not answer 501, so the app answers it with a 200",
      "TestConformanceLimits#test_rejects_te_on_http_1_0_with_400" =>
        "llhttp accepts Transfer-Encoding on an HTTP/1.0 request, which RFC 9112 §6.1 says to treat as faulty " \
        "framing; the app answers it with a 200"
    }
  }.freeze

  # The README's list of the gaps: a line per runtime, a bullet per test with its reason.
  def self.gaps_markdown
    KNOWN_GAPS.map do |runtime, gaps|
      next "- `#{runtime}`: none\n" if gaps.empty?

      "- `#{runtime}`:\n" + gaps.map { |test, reason| "  - `#{test}`: #{reason}\n" }.join
    end.join
  end
end
