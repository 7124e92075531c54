# frozen_string_literal: true

# Up::Node::RodaPlugins, which finds the Roda plugins an app loads so that up_node compiles
# them in (Roda requires them by a name built at run time): the plugins the app names, the
# plugins those load in turn, each once, and nothing from comments or from apps without Roda.
require_relative "helper"
require "tmpdir"
require "up/node/roda_plugins"

class TestUpNodeRodaPlugins < Minitest::Test
  def setup
    @dir = Dir.mktmpdir("roda-plugins")
    @gem = File.join(@dir, "gem")
    @shims = File.join(@dir, "shims")
    write(File.join(@gem, "roda", "plugins.rb"), "# Roda's plugin loader\n")
    write_plugin(@gem, "sessions", "app.plugin :_base64\n    app.plugin(:_json)\n")
    write_plugin(@gem, "json", "app.plugin :_json; app.plugin :custom_block_results\n")
    write_plugin(@gem, "_json", "")
    write_plugin(@gem, "_base64", "")
    write_plugin(@gem, "custom_block_results", "# plugin :render would need tilt\n")
    write_plugin(@gem, "render", "require 'tilt'\n")
    @finder = Up::Node::RodaPlugins.new([@shims, @gem])
  end

  def teardown
    FileUtils.rm_rf(@dir)
    super
  end

  def test_finds_the_plugins_an_app_names_and_those_they_load_once_each
    app = write(File.join(@dir, "app.rb"), <<~RUBY)
      class App < Roda
        plugin :sessions, secret: ENV.fetch("SECRET")
        plugin(:json)
        # plugin :render, when there are views
        plugin :no_such_plugin
        route { |r| r.plugin_free_call }
      end
    RUBY
    found = @finder.requires([File.join(@gem, "roda", "plugins.rb"), app])
    assert_equal %w[_base64 _json custom_block_results json sessions].map { |n| "roda/plugins/#{n}" }, found.sort
  end

  def test_a_replaced_plugin_is_read_from_the_first_path_that_has_it
    write_plugin(@shims, "json", "app.plugin :_json\n")
    app = write(File.join(@dir, "app.rb"), "plugin :json\n")
    found = @finder.requires([File.join(@gem, "roda", "plugins.rb"), app])
    assert_equal %w[roda/plugins/_json roda/plugins/json], found.sort
  end

  def test_an_app_without_roda_needs_none
    app = write(File.join(@dir, "config.ru"), "plugin :json\nrun ->(_env) { [200, {}, []] }\n")
    assert_empty @finder.requires([app])
  end

  private

  def write_plugin(root, name, body)
    write(File.join(root, "roda", "plugins", "#{name}.rb"), "class Roda\n  module RodaPlugins\n    #{body}  end\nend\n")
  end

  def write(path, text)
    FileUtils.mkdir_p(File.dirname(path))
    File.write(path, text)
    path
  end
end
