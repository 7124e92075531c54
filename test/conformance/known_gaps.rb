# frozen_string_literal: true

# Where a runtime behaves differently from what the conformance suite asserts: runtime =>
# "TestClass#test_name" => why. Each listed test still runs and must still fail on that
# runtime (a fix shows up as a failure asking to remove the entry); test_known_gaps.rb checks
# that every entry names a test, and that the README lists them as gaps_markdown writes them
# (rake test:conformance:gaps prints it).
module Conformance
  KNOWN_GAPS = {
    "up_ruby" => {},
    "up_node" => {
      "TestConformanceLimits#test_rejects_no_version_with_400" =>
        "llhttp reads a request line without a version as HTTP/0.9, so up_node's check of the version " \
        "(node/up_node/request_check.js) answers 505 where up_ruby answers 400",
      "TestConformanceLimits#test_rejects_two_spaces_after_method_with_400" =>
        "llhttp takes two spaces after the method, and Node keeps no raw request line for up_node to check, " \
        "so the app answers it with a 200",
      "TestConformanceRackEnv#test_env_offers_full_and_partial_hijack" =>
        "up_node has no hijacking yet: rack.hijack? is false and there is no rack.hijack",
      "TestConformanceRackEnv#test_env_has_the_same_keys_on_every_runtime" =>
        "up_node's env has no rack.hijack"
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
