# frozen_string_literal: true

# UP! as a user gets it. The gem is built from this checkout (`gem build`, with the npm packages
# bin/setup vendored into node/node_modules) and installed into an empty GEM_HOME, its
# dependencies from the .gem files of the gem caches already on the computer (no network);
# then apps outside the repository, in temp dirs, are served the ways the README says, over
# real HTTP on free loopback ports, and each server is stopped with TERM and must exit 0:
#
# - a Gemfile with only `gem "opal-up"`: `up_ruby`, `rackup -s up`, `up_node` and `up`;
# - a copy of examples/rails, as its README says: `bin/rails db:prepare`, `bin/rails s -u up`,
#   and in production `assets:precompile` too;
# - the one-line messages when `up`'s addon was not built, and when a path gem's checkout has
#   no extension yet.
#
# The gem is built and installed once a run, by the first test that needs it. Each command's
# time is printed at the end of the run, as a transcript of what a new user types.
require_relative "helper"
require_relative "support/cli_process"
require "etc"
require "fileutils"
require "json"
require "rbconfig"
require "securerandom"
require "tmpdir"

class TestPackaging < Minitest::Test
  include UpTestHelpers

  ROOT = CLIProcess::ROOT
  HELLO = <<~RUBY
    run ->(env) { [200, { "content-type" => "text/plain" }, ["hello from \#{env["SERVER_SOFTWARE"]}\\n"]] }
  RUBY
  GREETING = "hello from UP! #{Up::VERSION}\n"
  # What a checkout used as a path or git gem holds that UP! needs (less tests and benchmarks).
  CHECKOUT = %w[opal-up.gemspec Rakefile LICENSE README.md lib exe ext node opal].freeze

  # Shared by the tests of one run: a temp dir, the installed gem, the commands' times.
  class Install
    attr_reader :dir, :home, :transcript

    def initialize
      @dir = Dir.mktmpdir("up-packaging")
      @home = File.join(@dir, "gem_home")
      @transcript = []
    end

    def gem_dir
      File.join(@home, "gems", "opal-up-#{Up::VERSION}")
    end
  end

  def self.install
    @install ||= Install.new.tap do |install|
      Minitest.after_run do
        puts "\nPackaging transcript (seconds, command):"
        install.transcript.each { |seconds, line| puts format("%7.1f  %s", seconds, line) }
        FileUtils.rm_rf(install.dir)
      end
    end
  end

  # A cold `gem install` compiles the engine twice (MRI and Node) and Opal builds the app once:
  # minutes on a busy computer.
  def time_limit_seconds
    240
  end

  def setup
    @install = self.class.install
    build_and_install unless File.directory?(@install.gem_dir)
  end

  def test_an_app_with_only_the_gem_is_served_by_every_runtime
    app = make_app("hello", "source \"https://rubygems.org\"\n\ngem \"opal-up\"\n", "config.ru" => HELLO)
    execute!(app, "bundle", "install", "--local")
    # up_node first: it compiles the app, which up then reuses.
    [%w[up_ruby -b 127.0.0.1 -p 0], %w[rackup -s up -o 127.0.0.1 -p 0], %w[up_node -b 127.0.0.1 -p 0],
     %w[up -b 127.0.0.1 -p 0]].each do |command|
      serve(app, "bundle", "exec", *command) do
        assert_equal [200, GREETING], curl("/")
      end
    end
  end

  # A user who runs the installed executables without Bundler: Opal is not activated yet when
  # the start asks whether its build is fresh, and the build must still be found fresh.
  def test_a_start_without_bundler_reuses_the_build_of_the_last
    app = make_app("no_bundler", nil, "config.ru" => HELLO)
    first, second = Array.new(2) do
      serve(app, "up_node", "-b", "127.0.0.1", "-p", "0") { assert_equal [200, GREETING], curl("/") }
    end
    assert_match(/compiling config\.ru/, first)
    refute_match(/compiling config\.ru/, second, "the second start built the app again")
  end

  def test_the_gem_carries_each_npm_package_with_its_licence
    lock = JSON.parse(File.read(File.join(ROOT, "node", "package-lock.json")))
    packages = lock.fetch("packages").keys.grep(%r{\Anode_modules/})
    refute_empty packages
    packages.each do |dir|
      installed = File.join(@install.gem_dir, "node", dir)
      assert File.file?(File.join(installed, "package.json")), "#{dir} is not in the gem"
      refute_empty Dir.glob(File.join(installed, "{LICEN[CS]E,licen[cs]e}*")), "#{dir} has no licence file in the gem"
    end
  end

  def test_the_rails_example_copied_out_serves_in_development
    app = copy_rails_example("rails-development")
    execute!(app, "bundle", "install", "--local")
    execute!(app, "bin/rails", "db:prepare")
    serve(app, "bin/rails", "s", "-u", "up", "-b", "127.0.0.1", "-p", "0") do
      status, body = curl("/posts")
      assert_equal 200, status, body
      assert_includes body, "Post 1"
      assert_equal 200, curl("/").first
    end
  end

  def test_the_rails_example_copied_out_serves_in_production
    app = copy_rails_example("rails-production")
    env = { "RAILS_ENV" => "production", "SECRET_KEY_BASE" => SecureRandom.hex(64) }
    execute!(app, "bundle", "install", "--local")
    execute!(app, "bin/rails", "db:prepare", env: env)
    execute!(app, "bin/rails", "assets:precompile", env: env)
    serve(app, "bin/rails", "s", "-u", "up", "-b", "127.0.0.1", "-p", "0", env: env) do
      status, body = curl("/posts")
      assert_equal 200, status, body
      asset = body[%r{/assets/application-\h{8}\.css}]
      assert asset, "the index page links no fingerprinted stylesheet:\n#{body}"
      assert_equal 200, curl(asset).first
    end
  end

  # gem install leaves the addon out when Node's headers are missing: a copy of the installed
  # gem without it stands for that install.
  def test_up_without_its_addon_says_what_to_do_in_one_line
    copy = File.join(@install.dir, "gem-without-addon")
    FileUtils.rm_rf(copy)
    FileUtils.cp_r(@install.gem_dir, copy)
    FileUtils.rm_f(File.join(copy, "lib", "up", "up.node"))
    app = make_app("addon-missing", nil, "config.ru" => HELLO)
    status, output = execute(app, RbConfig.ruby, File.join(copy, "exe", "up"), "-b", "127.0.0.1", "-p", "0")
    assert_equal 1, status.exitstatus, output
    assert_equal 1, output.lines.size, output
    assert_match(/\Aup: the Node addon was not built .*Node's headers .*"gem pristine opal-up"\n\z/, output)
  end

  # What gem install runs first: without Node's headers the Makefile builds the MRI extension
  # alone, so the gem still installs.
  def test_extconf_leaves_the_addon_out_without_nodes_headers
    build = make_app("extconf-without-node", nil, {})
    env = { "NODE_INCLUDE" => File.join(build, "no-node-headers") }
    output = execute!(build, RbConfig.ruby, File.join(ROOT, "ext", "up", "extconf.rb"), env: env)
    assert_match(/checking for Node's headers in .*no-node-headers\.\.\. no/, output)
    # The Makefile itself, not `make -n`'s plan: in the whole suite's process a dry run of make
    # has hung (twice, not reproduced alone), and the rules are what this test is about.
    makefile = File.read(File.join(build, "Makefile"))
    assert_match(/^TARGET = up_ext$/, makefile)
    assert_match(/^all:\s+\$\(DLLIB\)$/, makefile)
    refute_includes makefile, "up.node"
  end

  # Bundler builds no extension for a path gem: its first start says how to build it.
  def test_a_path_gem_without_its_extension_says_how_to_build_it
    checkout = copy_checkout("checkout")
    app = make_app("path-gem", "source \"https://rubygems.org\"\n\ngem \"opal-up\", path: #{checkout.dump}\n",
                   "config.ru" => HELLO)
    execute!(app, "bundle", "install", "--local")
    status, output = execute(app, "bundle", "exec", "up_ruby", "-b", "127.0.0.1", "-p", "0")
    assert_equal 1, status.exitstatus, output
    assert_equal 1, output.lines.size, output
    assert_equal %(up_ruby: UP!'s native extension is not built (#{checkout}/lib/up/up_ext.#{RbConfig::CONFIG["DLEXT"]}): ) +
                 %(build it with "cd #{checkout} && rake compile"\n), output
  end

  # Bundler builds a git gem with extconf.rb, from a checkout without npm packages: extconf
  # installs them (from npm's cache here: no network).
  def test_extconf_installs_the_npm_packages_a_git_checkout_lacks
    checkout = copy_checkout("git-checkout")
    refute File.exist?(File.join(checkout, "node", "node_modules"))
    build = make_app("git-checkout-build", nil, {})
    execute!(build, RbConfig.ruby, File.join(checkout, "ext", "up", "extconf.rb"), env: { "npm_config_offline" => "true" })
    %w[ws ioredis].each do |package|
      assert File.file?(File.join(checkout, "node", "node_modules", package, "package.json")), "#{package} is not installed"
    end
  end

  private

  # What a checkout used as a path or git gem holds: nothing built, no npm packages.
  def copy_checkout(name)
    copy_tracked(ROOT, name, *CHECKOUT)
  end

  # source's files (or those under paths) as git lists them, the uncommitted ones included,
  # copied into a new dir of the test's temp dir called name.
  def copy_tracked(source, name, *paths)
    dir = File.join(@install.dir, name)
    FileUtils.rm_rf(dir)
    files = IO.popen(["git", "-C", source, "ls-files", "-co", "--exclude-standard", "-z", *paths], &:read).split("\0")
    refute_empty files
    files.each do |file|
      FileUtils.mkdir_p(File.join(dir, File.dirname(file)))
      FileUtils.cp(File.join(source, file), File.join(dir, file), preserve: true)
    end
    dir
  end

  # `gem build`, then `gem install --local` of the .gem into the empty GEM_HOME, run where
  # every cached .gem of the computer is linked, so dependencies come from there.
  def build_and_install
    built = File.join(@install.dir, "opal-up-#{Up::VERSION}.gem")
    output = execute!(ROOT, "gem", "build", "opal-up.gemspec", "--output", built)
    refute_match(/warning/i, output)
    cache = File.join(@install.dir, "gem_cache")
    FileUtils.mkdir_p(cache)
    Gem.path.flat_map { |dir| Dir.glob(File.join(dir, "cache", "*.gem")) }.each do |gem|
      link = File.join(cache, File.basename(gem))
      File.symlink(gem, link) unless File.exist?(link)
    end
    FileUtils.cp(built, cache)
    # MAKEFLAGS: gem install runs make without -j; the two builds of the engine go in parallel
    # as the README tells users to.
    execute!(cache, "gem", "install", "--local", "--no-document", File.basename(built),
             env: { "MAKEFLAGS" => "-j#{Etc.nprocessors}" }, timeout: 200)
  end

  # Where the commands run: the new GEM_HOME first (its executables on PATH), the computer's
  # installed gems after it (examples/rails' bundle, which bin/setup installed), nothing of
  # this test's own bundle, and a cache of Opal builds of its own.
  def user_env
    home = @install.home
    cleared = ENV.keys.grep(/\A(BUNDLE|BUNDLER)_|\ARUBY(OPT|LIB)\z/).to_h { |key| [key, nil] }
    cleared.merge("GEM_HOME" => home, "GEM_PATH" => [home, *Gem.path].uniq.join(File::PATH_SEPARATOR),
                  "PATH" => "#{File.join(home, "bin")}#{File::PATH_SEPARATOR}#{ENV.fetch("PATH")}",
                  "XDG_CACHE_HOME" => File.join(@install.dir, "cache"))
  end

  def make_app(name, gemfile, files)
    dir = File.join(@install.dir, name)
    FileUtils.rm_rf(dir)
    FileUtils.mkdir_p(dir)
    File.write(File.join(dir, "Gemfile"), gemfile) if gemfile
    files.each { |file, text| File.write(File.join(dir, file), text) }
    dir
  end

  # examples/rails as a user copies it.
  def copy_rails_example(name)
    copy_tracked(File.join(ROOT, "examples", "rails"), name)
  end

  # Runs command in dir to its end; returns [status, output] and records its time.
  def execute(dir, *command, env: {}, timeout: 120)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    process = CLIProcess.new(command: command, env: user_env.merge(env), chdir: dir, wait: false)
    status = process.wait(timeout: timeout)
    record(started, dir, command, env)
    [status, process.output]
  end

  def execute!(dir, *command, **options)
    status, output = execute(dir, *command, **options)
    assert status.success?, "#{command.join(" ")} failed:\n#{output}"
    output
  end

  # Starts command in dir, waits for its "listening" line (an Opal build comes first on
  # Node), yields with @port set, then stops it with TERM: it must exit 0. Returns its output.
  def serve(dir, *command, env: {})
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    server = CLIProcess.new(command: command, env: user_env.merge(env), chdir: dir, wait: false)
    @port = server.wait_listening(timeout: 150)
    record(started, dir, command, env, note: "until it listens")
    yield
    server.signal(:TERM)
    status = server.wait(timeout: 30)
    output = server.output
    server = nil # reaped: nothing left for ensure to stop
    assert_equal 0, status.exitstatus, "#{command.join(" ")} did not exit 0 on TERM:\n#{output}"
    output
  ensure
    server&.stop
  end

  # GET path with curl, as a user checks a server (Rails sends a 103 first, which curl skips):
  # [status, body].
  def curl(path)
    out = IO.popen(["curl", "-sS", "--max-time", "30", "-w", "\n%{http_code}", "http://127.0.0.1:#{@port}#{path}"], &:read)
    assert $?.success?, "curl #{path} failed: #{out}"
    body, _, code = out.rpartition("\n")
    [Integer(code, 10), body]
  end

  def record(started, dir, command, env, note: nil)
    seconds = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
    where = dir == ROOT ? "" : "(#{File.basename(dir)}) "
    vars = env.map { |k, v| k == "SECRET_KEY_BASE" ? "#{k}=..." : "#{k}=#{v}" }
    line = "#{where}$ #{[*vars, *command].join(" ")}#{"   # #{note}" if note}"
    @install.transcript << [seconds, line.gsub(@install.dir, "$TMP").gsub(ROOT, ".")]
  end
end
