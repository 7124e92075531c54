# frozen_string_literal: true

require "etc"
require "json"
require "open3"
require_relative "setup"

module Bench
  # The facts a reader needs to trust or reproduce a table: when, which commit, which machine,
  # which Ruby (and whether YJIT was on), and the version of every server and tool. Created
  # once by bench/run after Bench::Setup; reads files and runs version commands, owns nothing.
  class Machine
    attr_reader :root

    def initialize(root)
      @root = root
      @time = Time.now.utc
    end

    def date
      @time.strftime("%Y-%m-%d %H:%M UTC")
    end

    def timestamp
      @time.strftime("%Y%m%d-%H%M%S")
    end

    # Short commit, with a mark when the work tree differs from it.
    def commit
      sha, ok = capture(%w[git rev-parse --short HEAD])
      sha = ok ? sha.strip : "no commit yet"
      changed, = capture(%w[git status --porcelain])
      changed = changed.lines.reject { |l| l =~ %r{ (README\.md|docs/benchmarks\.md|bench/results/)} }
      changed.empty? ? sha : "#{sha} + uncommitted changes"
    end

    def cores
      Etc.nprocessors
    end

    def cpu
      model = File.foreach("/proc/cpuinfo").find { |l| l.start_with?("model name") }
      model ? model.split(":", 2).last.strip : "unknown CPU"
    rescue SystemCallError
      "unknown CPU"
    end

    def kernel
      out, ok = capture(%w[uname -sr])
      ok ? out.strip : "unknown kernel"
    end

    # `ruby -v` as the servers see it (with --yjit when it is on, which adds "+YJIT").
    def ruby(yjit)
      out, = capture(yjit ? %w[ruby --yjit -v] : %w[ruby -v])
      out.strip
    end

    # True when this ruby was built with YJIT and turns it on with --yjit.
    def yjit_supported?
      _, ok = capture(["ruby", "--yjit", "-e", "exit(defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled? ? 0 : 1)"])
      ok
    end

    # Version of a gem as locked in bench/Gemfile.lock (platform suffix dropped).
    def gem_version(name)
      lock = File.join(@root, "bench", "Gemfile.lock")
      return "?" unless File.exist?(lock)

      File.read(lock)[/^    #{Regexp.escape(name)} \(([^)-]+)/, 1] || "?"
    end

    def up_version
      File.read(File.join(@root, "lib", "up", "version.rb"))[/VERSION\s*=\s*"([^"]+)"/, 1] || "?"
    rescue SystemCallError
      "?"
    end

    def wrk_version
      out, = capture(%w[wrk -v])
      out[/^wrk (\S+)/, 1] || "?"
    end

    # The version of a Debian server: nginx, h2o, redis-server or node.
    def native_version(command)
      path = Setup.which(command) or return "not installed"
      return capture([path, "--version"]).first.strip.delete_prefix("v") if command == "node"

      out, = capture([path, command == "nginx" ? "-v" : "--version"])
      out[%r{(?:nginx/|h2o version |Redis server v=)(\S+)}, 1] || "?"
    end

    # The version of an npm package as locked in bench/package-lock.json (ws, for node_ws).
    def npm_version(name)
      lock = JSON.parse(File.read(File.join(@root, "bench", "package-lock.json")))
      lock.dig("packages", "node_modules/#{name}", "version") || "?"
    rescue SystemCallError, JSON::ParserError
      "?"
    end

    private

    # [stdout and stderr, success?]; a command that cannot run is just a failure.
    def capture(argv)
      out, status = Open3.capture2e(Setup.clean_env, *argv, chdir: @root)
      [out, status.success?]
    rescue SystemCallError => e
      [e.message, false]
    end
  end
end
