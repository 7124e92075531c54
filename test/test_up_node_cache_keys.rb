# frozen_string_literal: true

# What makes a cached Opal build stale: every input of the bundle is in its manifest (the
# app's and its gems' files, UP!'s shims and build code, rewriters included), another Opal
# version or shim list is a stale manifest, another gem version another cache directory, and
# Opal's cache of compiled files is keyed by a digest of UP!'s compiler and rewriters.
require_relative "helper"
require "json"
require "tmpdir"
require "up/node/bundle"
require "up/node/opal_builder"

class TestUpNodeCacheKeys < Minitest::Test
  def with_manifest
    Dir.mktmpdir do |dir|
      input = File.join(dir, "app.rb")
      File.write(input, "1\n")
      manifest = Up::Node::Manifest.new(File.join(dir, "manifest.json"), Up::Node::Bundle::OPAL_DIR)
      manifest.write([input])
      assert manifest.current?
      yield manifest, File.join(dir, "manifest.json"), input
    end
  end

  def test_a_changed_input_makes_the_manifest_stale
    with_manifest do |manifest, _path, input|
      File.write(input, "22\n")
      refute manifest.current?
    end
  end

  def test_another_opal_version_makes_the_manifest_stale
    with_manifest do |manifest, path, _input|
      stored = JSON.parse(File.read(path))
      File.write(path, JSON.generate(stored.merge("opal" => "#{stored.fetch("opal")}.1")))
      refute manifest.current?
    end
  end

  def test_another_list_of_shims_makes_the_manifest_stale
    with_manifest do |manifest, path, _input|
      stored = JSON.parse(File.read(path))
      File.write(path, JSON.generate(stored.merge("shims" => stored.fetch("shims") + ["zz_new_shim.rb"])))
      refute manifest.current?
    end
  end

  def test_another_gem_version_is_another_cache_directory
    rackup = File.expand_path("../examples/hello/config.ru", __dir__)
    one = Up::Node::Bundle.new(rackup, load_paths: ["/gems/rack-3.2.7/lib"], cache_root: "/cache")
    other = Up::Node::Bundle.new(rackup, load_paths: ["/gems/rack-3.2.8/lib"], cache_root: "/cache")
    refute_equal one.path, other.path
  end

  # The build's code and every rewriter are inputs of each bundle's manifest, and the
  # rewriters (with the compiler) key Opal's cache of compiled files.
  def test_rewriters_and_build_code_are_inputs
    rewriters = Dir[File.expand_path("../lib/up/node/rewriters/*.rb", __dir__)]
    refute_empty rewriters
    assert_empty rewriters - Up::Node::Compiler::SOURCES
    assert_empty Up::Node::Compiler::SOURCES - Up::Node::Bundle::TOOLS
    processor = Up::Node::RubyProcessor.new("1", "x.rb", "/app/x.rb", cache: Opal::Cache::NullCache.new)
    assert_includes processor.cache_key, Up::Node::Compiler.digest
  end
end
