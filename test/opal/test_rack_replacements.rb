# frozen_string_literal: true

require_relative "helper"

# The Rack files opal/ replaces are copies of one Rack release with marked changes; when
# the installed Rack's file differs from the one a replacement was made from, the
# replacement must be redone from the new file, so this fails.
class TestOpalRackReplacements < Minitest::Test
  REPLACED = %w[rack/lint.rb rack/multipart/parser.rb].freeze

  def test_replaced_rack_files_match_the_installed_rack
    REPLACED.each do |file|
      ours = File.read(File.join(OpalRack::SHIMS, file))
      base = ours[/^# Based on Rack [\d.]+, sha256 of the original: (\h{64})$/, 1]
      refute_nil base, "#{file}: no 'Based on' line"
      installed = Digest::SHA256.file(File.join(OpalRack::RACK_LIB, file)).hexdigest
      assert_equal base, installed, "opal/#{file} was made from another Rack's #{file}: redo it"
    end
  end

  def test_every_change_in_a_replacement_is_marked
    REPLACED.each do |file|
      assert_match(/UP!:/, File.read(File.join(OpalRack::SHIMS, file)), file)
    end
  end
end
