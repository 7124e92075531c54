# frozen_string_literal: true

# up_node's glob matcher for pub/sub patterns (node/up_node/glob.js) against the table of
# up_ruby's (up_glob_match, ext/up/engine/pubsub/pubsub.c), read from test/engine/pubsub_test.c so
# that the two runtimes are held to the same Redis PSUBSCRIBE rules and a case added there is
# a case here; the pathological pattern that a recursive matcher takes exponential time on;
# and bytes, not characters, as Redis compares them. test/conformance/test_pubsub.rb plays the
# same table through subscriptions on every runtime.
require "json"
require "open3"
require_relative "helper"

class TestUpNodeGlob < Minitest::Test
  RUNNER = File.expand_path("support/glob_cases.js", __dir__)
  C_TABLE = File.expand_path("engine/pubsub_test.c", __dir__)

  # The C table's rows, {"pattern", "string", 0 or 1}, with C's escapes undone.
  def self.c_cases
    table = File.read(C_TABLE)[/glob_case_t globs\[\] = \{\n(.*?)\n\};/m, 1] or raise "no glob table in #{C_TABLE}"
    literal = /"((?:[^"\\]|\\.)*)"/
    table.scan(/\{#{literal}, #{literal}, ([01])\}/).map do |pattern, string, matched|
      [unescape(pattern), unescape(string), matched == "1"]
    end
  end

  def self.unescape(c_string)
    c_string.gsub(/\\(.)/, '\1')
  end

  def matches(cases)
    out, status = Open3.capture2("node", RUNNER, stdin_data: JSON.generate(cases))
    assert status.success?, out
    JSON.parse(out)
  end

  def test_the_engines_table_gives_the_same_answers
    cases = self.class.c_cases
    assert_operator cases.size, :>=, 30, "the table was read"
    got = matches(cases.map { |pattern, string, _| [pattern, string] })
    wrong = cases.zip(got).reject { |(_, _, want), answer| want == answer }
    assert_empty wrong.map { |(pattern, string, want), _| "#{pattern.inspect} ~ #{string.inspect} should be #{want}" }
  end

  def test_a_pathological_pattern_ends_without_matching
    pattern = "*a" * 30 + "b"
    Timeout.timeout(5) { assert_equal [false], matches([[pattern, "a" * 60]]) }
  end

  # Redis compares bytes: "?" is one byte, so it takes one byte of "é" (C3 A9), not all of it.
  def test_patterns_match_bytes_of_utf8
    assert_equal [false, true, true], matches([["caf?", "café"], ["caf??", "café"], ["caf*", "café"]])
  end
end
