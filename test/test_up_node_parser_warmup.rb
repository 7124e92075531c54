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
      @children_before = child_pids
      yield bundle, -> { bundle.ensure_built }
    end
  end

  # No child the build started is left, running or exited and not waited for. Other tests of
  # the same process may have children of their own: only new ones count.
  def assert_no_child
    assert_empty child_pids - @children_before, "children of this process left by the build"
  end

  # The pids whose parent is this process, zombies included (/proc/PID/stat: "pid (comm) state ppid ...").
  def child_pids
    Dir.glob("/proc/[0-9]*/stat").filter_map do |stat|
      fields = File.read(stat).sub(/\A.*\) /m, "").split
      File.basename(File.dirname(stat)).to_i if fields[1].to_i == Process.pid
    rescue Errno::ENOENT, Errno::ESRCH
      nil
    end
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
