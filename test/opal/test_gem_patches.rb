# frozen_string_literal: true

require_relative "helper"
require_relative "../../lib/up/node/rewriters/gem_patches"

# The build-time patches of installed gems' files (lib/up/node/rewriters/gem_patches.rb):
# each finds the text it replaces in the installed gem exactly once, and a patch whose text
# is gone stops the build with the gem's name, its version and the file.
class TestGemPatches < Minitest::Test
  PATCHES = Up::Node::Rewriters::GemPatches

  def test_each_patch_finds_its_text_once_in_the_installed_gem
    PATCHES::ALL.each do |name, files|
      spec = Gem.loaded_specs.fetch(name) { flunk "#{name} is patched but not installed" }
      files.each do |file, patches|
        path = File.join(spec.full_gem_path, file)
        assert File.file?(path), "#{name} #{spec.version}: no #{file} to patch"
        source = File.read(path)
        patches.each do |patch|
          assert_equal 1, source.scan(patch.from).size,
                       "#{name} #{spec.version} #{file}: the patched text changed (#{patch.from.inspect}); redo the patch"
          refute_empty patch.why.to_s
        end
        patched = PATCHES.apply(path, source)
        refute_equal source, patched
        RubyVM::InstructionSequence.compile(patched, path) # still Ruby
      end
    end
  end

  def test_a_gem_whose_text_changed_stops_the_build_naming_gem_version_and_file
    name, files = PATCHES::ALL.first
    file = files.keys.first
    path = "/somewhere/gems/#{name}-99.0.0/#{file}"
    error = assert_raises(PATCHES::Error) { PATCHES.apply(path, "# frozen_string_literal: true\n") }
    assert_includes error.message, "#{name} 99.0.0 #{file}"
    assert_equal "x = 1\n", PATCHES.apply("/somewhere/gems/other-1.0/#{file}", "x = 1\n")
  end
end
