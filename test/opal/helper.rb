# frozen_string_literal: true

# Shared by the Opal compatibility tests: each test names a script in test/opal/scripts/,
# compiles it with Opal (opal/ first on the load path, then Rack's lib from the bundle,
# rack_compat preloaded as the up_node build does), runs the bundle with node, and usually
# runs the same script under MRI to compare what both print. No UP! extension is needed.
require "minitest/autorun"
require "timeout"
require "open3"
require "digest"
require "fileutils"
require "rbconfig"
require "stringio"
require_relative "../../lib/up/node/opal_builder"
require_relative "../support/test_timeout"

Minitest::Test.prepend(UpTestTimeout)

module OpalRack
  ROOT = File.expand_path("../..", __dir__)
  SHIMS = File.join(ROOT, "opal")
  SCRIPTS = File.join(__dir__, "scripts")
  RACK_LIB = File.join(Gem.loaded_specs.fetch("rack").full_gem_path, "lib")
  OPAL_GEM = Gem.loaded_specs.fetch("opal").full_gem_path
  # Opal's nodejs File/Dir need the npm packages Opal ships (glob, ...); the opal CLI sets this.
  NODE_PATH = File.join(OPAL_GEM, "stdlib", "nodejs", "node_modules")
  CACHE = File.join(ROOT, "tmp", "opal-test")
  # Seconds one node or ruby child may run before the test fails.
  CHILD_TIMEOUT = 30

  module_function

  # Path of the JavaScript bundle for scripts/<name>.rb, compiled once per content of the
  # script, of every shim and of our compiler (so an edit to either rebuilds, and a rerun
  # does not). Built as up_node builds an app (Up::Node::OpalBuilder).
  def bundle(name)
    source = File.read(script_path(name))
    key = Digest::SHA256.hexdigest([source, shim_digest, Up::Node::Compiler.digest, Opal::VERSION, RACK_LIB].join("\0"))
    out = File.join(CACHE, "#{name}-#{key[0, 16]}.js")
    return out if File.exist?(out)

    FileUtils.mkdir_p(CACHE)
    builder = Up::Node::OpalBuilder.create(load_paths)
    quietly do
      Up::Node::OpalBuilder.build_prelude(builder)
      builder.build_str(source, "#{name}.rb")
    end
    write_parser(builder, out)
    File.write("#{out}.tmp", builder.to_s)
    File.rename("#{out}.tmp", out)
    out
  end

  # Opal's parser beside the bundle at out, as up_node writes it, when the script
  # evaluates Ruby in a String (opal/opal_fixes/string_eval.rb loads it).
  def write_parser(builder, out)
    return unless Up::Node::OpalBuilder.string_eval?(builder)

    parser = quietly { Up::Node::OpalBuilder.parser(builder, load_paths) }
    File.write(Up::Node::OpalBuilder.parser_path(out), parser.to_s)
  end

  # Opal warns on every /n regexp in Rack (JS has no byte mode; the flag changes nothing
  # for the ASCII patterns Rack writes), which would drown the test output.
  def quietly
    stderr = $stderr
    $stderr = StringIO.new
    yield
  rescue Exception => e # rubocop:disable Lint/RescueException
    raise e.class, "#{e.message}\n#{$stderr.string}", e.backtrace
  ensure
    $stderr = stderr
  end

  def load_paths
    Up::Node::OpalBuilder.load_path([RACK_LIB])
  end

  def shim_digest
    @shim_digest ||= Digest::SHA256.hexdigest(
      Dir[File.join(SHIMS, "**", "*")].sort.select { |f| File.file?(f) }.map { |f| f + File.read(f) }.join
    )
  end

  def script_path(name)
    File.join(SCRIPTS, "#{name}.rb")
  end

  # [stdout, stderr, Process::Status] of the script compiled by Opal and run by node.
  def run_opal(name)
    js = bundle(name)
    capture({ "NODE_PATH" => NODE_PATH }, "node", js)
  end

  # [stdout, stderr, Process::Status] of the same script on MRI with the same Rack.
  def run_mri(name)
    capture({}, RbConfig.ruby, "-I", RACK_LIB, script_path(name))
  end

  def capture(env, *cmd)
    Open3.capture3(env, "timeout", "-k", "5", CHILD_TIMEOUT.to_s, *cmd, chdir: SCRIPTS)
  end
end

module OpalRackAssertions
  # Runs scripts/<name>.rb under node and under MRI; both must exit 0 and print the same.
  # Returns the output, for extra assertions.
  def assert_same_on_opal_and_mri(name)
    mri_out, mri_err, mri = OpalRack.run_mri(name)
    assert mri.success?, "#{name} failed on MRI:\n#{mri_err}"
    out = assert_runs_on_opal(name)
    assert_equal mri_out, out, "#{name}: Opal's output differs from MRI's"
    out
  end

  # Runs scripts/<name>.rb under node; it must exit 0. Returns its output.
  def assert_runs_on_opal(name)
    out, err, status = OpalRack.run_opal(name)
    assert status.success?, "#{name} failed on Opal (#{status.inspect}):\n#{out}\n#{err[0, 4000]}"
    out
  end
end
Minitest::Test.include(OpalRackAssertions)
