# frozen_string_literal: true

require "fileutils"
require "open3"
require "rbconfig"
require "tmpdir"

module Bench
  # How long an Opal runtime takes from the command to its "listening on" line, for an app in
  # three states of the caches: nothing built on the machine (UP!'s cache of the app and Opal's
  # cache of compiled files both empty), the app's first build on a machine that built others
  # (Opal's cache kept, the app's bundle removed), and a warm start (both kept). Each start is
  # `bundle exec` with the repository's Gemfile (which has the examples' gems), `-w 1`, on a
  # free loopback port, stopped with TERM once it listens. The caches live in a temp
  # directory of the run (XDG_CACHE_HOME, OPAL_CACHE_DIR), so the user's are not touched.
  # Owns that directory and one server at a time.
  class BuildTime
    Start = Struct.new(:state, :seconds, :cpu, :build, :sizes, keyword_init: true)

    STATES = { cold: "nothing built on the machine", app_cold: "first build of the app, Opal's cache warm",
               warm: "warm start" }.freeze
    LISTENING = /listening on/
    # A start that takes longer has hung: on a busy two-core machine a cold build took 90 s.
    LIMIT_SECONDS = 600

    def initialize(root, exe: "up_node", warm_runs: 3)
      @root = root
      @exe = File.join(root, "exe", exe)
      @warm_runs = warm_runs
    end

    # Starts the app (a config.ru) in each state in turn; returns the Starts.
    def run(rackup)
      Dir.mktmpdir("up-build-time") do |cache|
        starts = [start(:cold, rackup, cache)]
        FileUtils.rm_rf(File.join(cache, "up"))
        starts << start(:app_cold, rackup, cache)
        starts + Array.new(@warm_runs) { start(:warm, rackup, cache) }
      end
    end

    private

    def start(state, rackup, cache)
      env = { "XDG_CACHE_HOME" => cache, "OPAL_CACHE_DIR" => File.join(cache, "opal"),
              "BUNDLE_GEMFILE" => File.join(@root, "Gemfile") }
      before = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      cpu_before = children_cpu
      out = +""
      Open3.popen2e(env, "bundle", "exec", RbConfig.ruby, @exe, "-w", "1", "-b", "127.0.0.1", "-p", "0", rackup,
                    chdir: @root, pgroup: true) do |_in, output, waiter|
        seconds = read_until_listening(output, out, before)
        Process.kill(:TERM, waiter.pid)
        output.read
        waiter.value
        Start.new(state: state, seconds: seconds, cpu: children_cpu - cpu_before,
                  build: out[/compiled \S+ in (\d+\.\d+) s/, 1]&.to_f, sizes: out[/compiled \S+ in \S+ s \((.*)\)/, 1])
      end
    end

    def read_until_listening(output, out, before)
      while (line = output.gets)
        out << line
        return Process.clock_gettime(Process::CLOCK_MONOTONIC) - before if line.match?(LISTENING)
        raise "no start within #{LIMIT_SECONDS} s:\n#{out}" if Process.clock_gettime(Process::CLOCK_MONOTONIC) - before > LIMIT_SECONDS
      end
      raise "the server stopped before listening:\n#{out}"
    end

    # CPU seconds of the children this process has waited for (the server and what it forked).
    def children_cpu
      times = Process.times
      times.cutime + times.cstime
    end
  end
end
