# frozen_string_literal: true

require_relative "helper"

# opal/ holds only our own code: where a gem's file cannot work on Opal, it is patched
# when the app is built (lib/up/node/rewriters/gem_patches.rb), never copied here. Each
# file of opal/ is compared with the Ruby files of the installed Rack, Roda and Sinatra
# (and the gems Sinatra brings: rack-protection, rack-session): it may share only a few
# lines of substance with them, the ones any two Ruby files might share.
class TestNoCopiedText < Minitest::Test
  GEMS = %w[rack roda sinatra rack-protection rack-session].freeze
  # Lines shared by chance (a `require`, a short call) are allowed up to this many per file.
  MOST_SHARED = 3
  # A line counts when, stripped, it has at least this many characters and is not a comment.
  SUBSTANCE = 24

  def test_no_file_in_opal_shares_more_than_a_few_lines_with_the_gems
    upstream = GEMS.flat_map { |name| Dir[File.join(Gem.loaded_specs.fetch(name).full_gem_path, "lib", "**", "*.{rb,erb}")] }
                   .flat_map { |file| substantial_lines(File.read(file)) }.to_set
    refute_empty upstream
    copied = Dir[File.join(OpalRack::SHIMS, "**", "*")].select { |f| File.file?(f) }.filter_map do |file|
      shared = substantial_lines(File.read(file)).uniq.select { |line| upstream.include?(line) }
      "#{file.delete_prefix("#{OpalRack::ROOT}/")}: #{shared.size} lines, such as #{shared.first(3).inspect}" if shared.size > MOST_SHARED
    end
    assert_empty copied, "files in opal/ with text from #{GEMS.join(', ')}"
  end

  private

  def substantial_lines(text)
    text.scrub.lines.map(&:strip).reject { |line| line.length < SUBSTANCE || line.start_with?("#") }
  end
end
