# frozen_string_literal: true

# known_gaps.rb stays honest: every entry names a runtime of runtimes.rb and a test of the
# suite, so a renamed test cannot leave a stale entry behind, and docs/opal.md and docs/tls.md list them all.
require_relative "helper"
# Every file of the suite this run runs, to know its tests (requiring a file runs its tests):
# not those not built on this runtime, nor those left out over TLS or HTTP/2 when this run is.
Dir[File.join(__dir__, "test_*.rb")].each do |file|
  require file if Conformance.files_for(Conformance::RUNTIME, [file], tls: Conformance::TLS, h2: Conformance::H2).any?
end

class TestConformanceKnownGaps < Minitest::Test
  def test_every_known_gap_names_a_runtime_and_a_test_and_gives_a_reason
    all = [Conformance::KNOWN_GAPS_OVER_TLS, Conformance::KNOWN_GAPS_OVER_H2].reduce(Conformance::KNOWN_GAPS) do |gaps, more|
      gaps.merge(more) { |_, these, those| these.merge(those) }
    end
    all.each do |runtime, gaps|
      assert_includes Conformance::RUNTIMES.keys, runtime.delete_suffix(" over TLS")
      gaps.each { |test, reason| assert_a_test_of_the_suite(test, runtime, reason) }
    end
  end

  def test_every_file_not_built_on_a_runtime_is_a_file_of_the_suite
    Conformance::NOT_BUILT.each do |runtime, files|
      assert_includes Conformance::RUNTIMES.keys, runtime
      files.each { |file, reason| assert_a_file_of_the_suite(file, runtime, reason) }
    end
  end

  def test_every_test_not_run_over_tls_is_a_test_of_the_suite
    Conformance::NOT_RUN_OVER_TLS.each do |runtime, tests|
      assert_includes Conformance::RUNTIMES.keys, runtime
      tests.each { |test, reason| assert_a_test_of_the_suite(test, runtime, reason) }
    end
  end

  def test_every_test_and_file_left_out_over_http2_is_of_the_suite
    Conformance::HTTP1_ONLY.each { |test, reason| assert_a_test_of_the_suite(test, "HTTP/1 only", reason) }
    Conformance::H2_NOT_RUN.each { |file, reason| assert_a_file_of_the_suite(file, "HTTP/2", reason) }
  end

  def test_every_runtime_and_file_left_out_over_tls_is_of_the_suite
    Conformance::TLS_NOT_BUILT.each do |runtime, reason|
      assert_includes Conformance::RUNTIMES.keys, runtime
      refute_empty reason.to_s.strip, "#{runtime} has no reason"
    end
    Conformance::TLS_NOT_RUN.each { |file, reason| assert_a_file_of_the_suite(file, "TLS", reason) }
  end

  # test ("Class#method"), listed under where, is a test of the suite (loaded or not by this run)
  # and gives a reason.
  def assert_a_test_of_the_suite(test, where, reason)
    klass, method = test.split("#", 2)
    if Object.const_defined?(klass)
      assert Object.const_get(klass).method_defined?(method), "known_gaps.rb: #{test} (#{where}) is not a test of the suite"
    else
      assert not_loaded_here(klass), "known_gaps.rb: #{test} (#{where}): no class #{klass} in the suite"
    end
    refute_empty reason.to_s.strip, "#{test} has no reason"
  end

  # file, listed under where, is a file of the suite and gives a reason.
  def assert_a_file_of_the_suite(file, where, reason)
    assert File.file?(File.join(__dir__, file)), "runtimes.rb: #{file} (#{where}) is not a file of the suite"
    refute_empty reason.to_s.strip, "#{file} has no reason"
  end

  # Whether a file of the suite that this run does not load (NOT_BUILT on this runtime, or left
  # out over TLS or HTTP/2) defines klass.
  def not_loaded_here(klass)
    files = Dir[File.join(__dir__, "test_*.rb")]
    (files - Conformance.files_for(Conformance::RUNTIME, files, tls: Conformance::TLS, h2: Conformance::H2)).any? do |file|
      File.read(file).match?(/^class #{klass}\b/)
    end
  end

  def test_the_docs_list_the_known_gaps_as_the_file_has_them
    opal = File.read(File.join(Conformance::ROOT, "docs", "opal.md"))
    assert_includes opal, Conformance.gaps_markdown,
                    "run rake test:conformance:gaps and paste its first part in docs/opal.md, Known gaps"
    tls = File.read(File.join(Conformance::ROOT, "docs", "tls.md"))
    assert_includes tls, Conformance.tls_gaps_markdown,
                    "run rake test:conformance:gaps and paste its TLS part in docs/tls.md"
    http2 = File.read(File.join(Conformance::ROOT, "docs", "http2.md"))
    assert_includes http2, Conformance.h2_gaps_markdown,
                    "run rake test:conformance:gaps and paste its HTTP/2 part in docs/http2.md"
  end
end
