# frozen_string_literal: true

require_relative "helper"

# The Roda files opal/ replaces (each says why at its top) are copies of one Roda release with
# marked changes; when the installed Roda's file differs from the one a replacement was made
# from, the replacement must be redone from the new file, so this fails.
class TestOpalRodaReplacements < Minitest::Test
  RODA_LIB = File.join(Gem.loaded_specs.fetch("roda").full_gem_path, "lib")
  REPLACED = %w[roda.rb].freeze

  def test_replaced_roda_files_match_the_installed_roda
    assert_replacements_made_from("Roda", RODA_LIB, REPLACED)
  end

  def test_every_replaced_roda_file_is_in_opal
    assert_equal REPLACED.sort, Dir.glob("roda{.rb,/**/*.rb}", base: OpalRack::SHIMS).sort
  end
end
