# frozen_string_literal: true

require "optparse"
require "etc"
require_relative "apps"
require_relative "ws_load"

module Bench
  # The command line of bench/run, parsed once into plain values. Created by bench/run; owns
  # nothing but the values. Bad arguments raise Options::Error with a message for the user.
  class Options
    class Error < StandardError; end

    APPS = Apps.names.freeze

    # The default load shape: one wrk thread, 32 connections, which leaves most of a core to the
    # server. --load t2c64 is the heavier one for the all-cores tables.
    DEFAULT_WRK_THREADS = 1
    DEFAULT_CONNECTIONS = 32
    LOAD_PATTERN = /\At(\d+)c(\d+)\z/

    attr_reader :runs, :duration, :warmup, :wrk_threads, :connections, :apps, :only, :workers, :doc,
                :section, :install, :build, :yjit, :baseline, :ws_window, :argv

    def initialize(argv)
      @argv = argv.dup
      @runs = 3
      @duration = 5
      @warmup = 2
      @wrk_threads = DEFAULT_WRK_THREADS
      @connections = DEFAULT_CONNECTIONS
      @apps = Apps.defaults
      @only = nil
      @workers = [1, Etc.nprocessors].uniq
      @doc = "docs/benchmarks.md"
      @section = "bench"
      @install = true
      @build = true
      @yjit = true
      @baseline = nil
      @ws_window = WsLoad::DEFAULT_WINDOW
      parse(argv.dup)
    end

    # True when the peer named key (or its group, such as "up" for both UP! rows) was picked.
    def only?(key, group)
      @only.nil? || @only.include?(key) || @only.include?(group)
    end

    # The load shape as "t<wrk threads>c<connections>" ("t1c32", "t2c64"), as --load takes it.
    def load_shape
      "t#{@wrk_threads}c#{@connections}"
    end

    # True unless --load, --wrk-threads or --connections changed the shape: the tables then say
    # which shape they were measured with, so they cannot pass for the default ones.
    def default_load?
      @wrk_threads == DEFAULT_WRK_THREADS && @connections == DEFAULT_CONNECTIONS
    end

    private

    def parse(args)
      parser.parse!(args)
      raise Error, "unexpected arguments: #{args.join(" ")}" unless args.empty?

      unknown = @apps - APPS
      raise Error, "unknown app(s): #{unknown.join(", ")} (known: #{APPS.join(", ")})" unless unknown.empty?
      raise Error, "--runs must be at least 1" if @runs < 1
      raise Error, "--duration must be at least 1" if @duration < 1
      raise Error, "--warmup must not be negative" if @warmup.negative?
      raise Error, "--connections must be at least 1" if @connections < 1
      raise Error, "--wrk-threads must be at least 1" if @wrk_threads < 1
      # wrk gives each of its threads connections / threads of them, and refuses fewer than one.
      raise Error, "--connections must be at least --wrk-threads" if @connections < @wrk_threads
      raise Error, "--workers must be positive numbers" unless @workers.all?(&:positive?)
      raise Error, "--ws-window must be 1 to 64" unless (1..64).cover?(@ws_window)
    rescue OptionParser::ParseError => e
      raise Error, e.message
    end

    def parser
      OptionParser.new do |o|
        o.banner = "Usage: bench/run [options]"
        o.separator ""
        o.separator "Runs UP! and its peers on the same test/rackup apps and prints a table per app"
        o.separator "and worker count. The servers of a table run at once, and their measured runs"
        o.separator "are interleaved in rounds (see bench/README.md)."
        o.separator ""
        o.on("--runs N", Integer, "Rounds (measured runs per server); the median is reported (#{@runs})") { |v| @runs = v }
        o.on("--duration S", Integer, "Seconds per measured run (#{@duration})") { |v| @duration = v }
        o.on("--warmup S", Integer, "Seconds of warm-up before the runs, 0 for none (#{@warmup})") { |v| @warmup = v }
        o.on("--connections N", Integer, "wrk connections (#{@connections})") { |v| @connections = v }
        o.on("--wrk-threads N", Integer, "wrk threads (#{@wrk_threads})") { |v| @wrk_threads = v }
        o.on("--load SHAPE", "wrk threads and connections at once: t1c32 (the default) or",
             "t2c64 (the heavier shape); tNcM in general") do |v|
          m = LOAD_PATTERN.match(v) or raise OptionParser::InvalidArgument, "--load #{v} (want tNcM, e.g. t2c64)"
          @wrk_threads = Integer(m[1], 10)
          @connections = Integer(m[2], 10)
        end
        o.on("--quick", "Smoke test: 1 run of 2 s after a 1 s warm-up") do
          @runs = 1
          @duration = 2
          @warmup = 1
        end
        o.on("--only LIST", Array, "Servers to run, e.g. up,puma (up is every UP! row; up_default,",
             "up_thread, up_io_thread, up_threads, up_metrics, up_node, up_addon (exe/up), node_http, node_ws (node: those four),",
             "agoo, falcon,",
             "iodine, itsi,",
             "puma_thread, puma, unicorn,",
             "nginx, nginx_static, h2o; puma is both puma rows, nginx both nginx rows)") { |v| @only = v }
        o.on("--apps LIST", Array, "Apps (#{Apps.defaults.join(",")} unless given; also",
             "#{(APPS - Apps.defaults).join(",")}: see bench/README.md)") { |v| @apps = v }
        o.on("--workers LIST", Array, "Worker counts to run (#{@workers.join(",")}: one, then all cores)") do |v|
          @workers = v.map { |w| Integer(w) }
        rescue ArgumentError
          raise OptionParser::InvalidArgument, "--workers #{v.join(",")}"
        end
        o.on("--ws-window N", Integer, "ws_broadcast: messages in flight at most (#{@ws_window})") { |v| @ws_window = v }
        o.on("--baseline REV", "Also run UP! at git revision REV (built in a temporary git worktree)",
             "as a row \"UP! @<rev>\" with the default row's settings: before and after") { |v| @baseline = v }
        o.on("--no-doc", "Do not write the tables into docs/benchmarks.md") { @doc = nil }
        o.on("--doc FILE", "Write the tables into FILE instead of docs/benchmarks.md") { |v| @doc = v }
        o.on("--section NAME", "Replace the tables between <!-- bench:NAME:start/end --> instead of",
             "<!-- bench:start/end --> (appended when missing)") { |v| @section = v }
        o.on("--no-install", "Do not apt-get install or bundle install anything") { @install = false }
        o.on("--no-build", "Do not run bin/setup (which builds UP!'s extension)") { @build = false }
        o.on("--no-yjit", "Run the Ruby servers without YJIT") { @yjit = false }
        o.on("-h", "--help", "Print this help") do
          puts o
          exit 0
        end
      end
    end
  end
end
