# frozen_string_literal: true

require "optparse"
require_relative "options"

module Bench
  # The command line of bench/slow_reader, bench/slow_call and bench/idle_memory: what they
  # share (--only, --quick, --no-install, --no-build, --no-yjit, --help) plus the scenario's
  # own options, which its script adds in a block and keeps in #values. Created once by each
  # script; owns nothing but the values. Bad arguments raise Options::Error, as bench/run's do.
  class ScenarioOptions
    attr_reader :only, :install, :build, :yjit, :quick, :argv, :values

    # program: for the help. about: lines describing the scenario. servers: the peer keys it
    # can run, in order (--only picks among them). values: the scenario's defaults; quick: what
    # --quick puts in their place. The block gets the OptionParser and the values Hash.
    def initialize(argv, program:, about:, servers:, values: {}, quick: {}, &extra)
      @argv = argv.dup
      @program = program
      @about = about
      @servers = servers
      @values = values.dup
      @quick_values = quick
      @extra = extra
      @only = servers
      @install = true
      @build = true
      @yjit = true
      @quick = false
      parse(argv.dup)
    end

    def [](key)
      @values.fetch(key)
    end

    private

    # --quick's values go in first, so that an explicit option wins wherever it is written.
    def parse(args)
      @values.merge!(@quick_values) if args.include?("--quick")
      parser.parse!(args)
      raise Options::Error, "unexpected arguments: #{args.join(" ")}" unless args.empty?

      unknown = @only - @servers
      raise Options::Error, "unknown server(s): #{unknown.join(", ")} (known: #{@servers.join(", ")})" if unknown.any?
    rescue OptionParser::ParseError => e
      raise Options::Error, e.message
    end

    def parser
      OptionParser.new do |o|
        o.banner = "Usage: #{@program} [options]"
        o.separator ""
        @about.each { |line| o.separator line }
        o.separator ""
        o.on("--only LIST", Array, "Servers to run (#{@servers.join(",")})") { |v| @only = v }
        o.on("--quick", "Smoke test: #{@quick_values.map { |k, v| "#{k} #{Array(v).join(",")}" }.join(", ")}") do
          @quick = true
        end
        @extra&.call(o, @values)
        o.on("--no-install", "Do not apt-get install anything") { @install = false }
        o.on("--no-build", "Do not run bin/setup (which builds UP!'s extension)") { @build = false }
        o.on("--no-yjit", "Run UP! without YJIT") { @yjit = false }
        o.on("-h", "--help", "Print this help") do
          puts o
          exit 0
        end
      end
    end
  end
end
