# frozen_string_literal: true

# known_gaps.rb stays honest: every entry names a runtime of runtimes.rb and a test of the
# suite, so a renamed test cannot leave a stale entry behind, and the README lists them all.
require_relative "helper"
Dir[File.join(__dir__, "test_*.rb")].each { |file| require file }

class TestConformanceKnownGaps < Minitest::Test
  def test_every_known_gap_names_a_runtime_and_a_test_and_gives_a_reason
    Conformance::KNOWN_GAPS.each do |runtime, gaps|
      assert_includes Conformance::RUNTIMES.keys, runtime
      gaps.each do |test, reason|
        klass, method = test.split("#", 2)
        assert Object.const_defined?(klass) && Object.const_get(klass).method_defined?(method),
               "known_gaps.rb: #{test} (#{runtime}) is not a test of the suite"
        refute_empty reason.to_s.strip, "#{test} has no reason"
      end
    end
  end

  def test_the_readme_lists_the_known_gaps_as_the_file_has_them
    readme = File.read(File.join(Conformance::ROOT, "README.md"))
    assert_includes readme, Conformance.gaps_markdown, "run rake test:conformance:gaps and paste its output in the README"
  end
end
