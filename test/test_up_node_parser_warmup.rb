# frozen_string_literal: true

# The build compiles Opal's parser in a forked child while it compiles the app
# (Up::Node::ParserWarmup): the child never outlives the build, whether the app needs the
# parser, does not, or does not compile; and the parser file it helps build works.
require_relative "helper"
require "json"
require "open3"
require "tmpdir"
require "up/node/bundle"

class TestUpNodeParserWarmup < Minitest::Test
  # A build from an empty cache on a busy two-core machine can take a minute.
  def time_limit_seconds
    300
  end

  def build(source)
    Dir.mktmpdir do |dir|
      rackup = File.join(dir, "config.ru")
      File.write(rackup, source)
      bundle = Up::Node::Bundle.new(rackup, cache_root: File.join(dir, "cache"))
      yield bundle, -> { bundle.ensure_built }
    end
  end

  # No child of this process is left, running or exited.
  def assert_no_child
    assert_raises(Errno::ECHILD) { Process.wait(-1, Process::WNOHANG) }
  end

  def test_an_app_without_a_string_eval_stops_the_warmup_and_has_no_parser
    build(%(run ->(_env) { [200, {}, ["plain"]] }\n)) do |bundle, ensure_built|
      assert_equal :built, ensure_built.call
      assert_no_child
      assert_nil bundle.sizes.last
    end
  end

  def test_an_app_with_a_string_eval_gets_a_parser_that_compiles
    build(%(Greeter = Class.new { class_eval("def hi() 'hi' end") }\nrun ->(_env) { [200, {}, [Greeter.new.hi]] }\n)) do |bundle, ensure_built|
      assert_equal :built, ensure_built.call
      assert_no_child
      assert File.size(bundle.parser_path).positive?
      script = File.join(File.dirname(bundle.path), "run.js")
      File.write(script, "require(#{bundle.path.to_json}); console.log(Opal.Greeter.$new().$hi());\n")
      out, err, status = Open3.capture3({ "NODE_PATH" => node_path }, "timeout", "30", "node", script)
      assert status.success?, err
      assert_equal "hi\n", out
    end
  end

  def test_a_build_that_fails_stops_the_warmup
    build("run ->(_env) { [200, {}, [1 +]] }\n") do |_bundle, ensure_built|
      assert_raises(Up::Node::Bundle::CompileError) { ensure_built.call }
      assert_no_child
    end
  end

  private

  def node_path
    File.join(Gem.loaded_specs.fetch("opal").full_gem_path, "stdlib", "nodejs", "node_modules")
  end
end
