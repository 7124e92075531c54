# frozen_string_literal: true

require "optparse"
require_relative "options"
require_relative "version"

module Up
  # The command line of up_ruby (and, later, of up and up_node): turns ARGV into settings
  # checked by Up::Options and hands them to Up::Launcher. Bad arguments end the process with
  # a one-line message and status 1, never with a backtrace.
  class CLI
    DEFAULTS = Options::DEFAULTS

    class UsageError < StandardError; end

    def initialize(argv, program: "up_ruby", out: $stdout)
      @argv = argv.dup
      @program = program
      @out = out
    end

    # The options, or nil when the command only printed something (-v, -h).
    def parse
      options = {}
      parser = build_parser(options)
      rest = parser.parse(@argv)
      return nil if @printed
      raise UsageError, "too many arguments: #{rest.join(" ")}" if rest.size > 1

      options[:config] = rest.first
      Options.new(options).to_h
    rescue OptionParser::ParseError, Options::Error => e
      raise UsageError, e.message
    end

    def run
      options = parse
      return 0 unless options

      require_relative "launcher"
      Launcher.new(options).run
    rescue UsageError => e
      warn "#{@program}: #{e.message}"
      warn "Try '#{@program} --help'."
      1
    rescue Launcher::StartError => e
      warn "#{@program}: #{e.message}"
      1
    end

    private

    def build_parser(options)
      OptionParser.new do |o|
        o.banner = "Usage: #{@program} [options] [config.ru]"
        o.separator ""
        o.separator "Serves a Rack app with UP! (config.ru defaults to ./config.ru)."
        o.separator ""
        o.on("-p", "--port PORT", Integer, "Port to listen on (#{DEFAULTS[:port]})") { |v| options[:port] = v }
        o.on("-b", "--bind HOST", "Address to bind (#{DEFAULTS[:bind]})") { |v| options[:bind] = v }
        o.on("-w", "--workers N", Integer, "Worker processes (number of processors; 0 and 1 mean a single process)") { |v| options[:workers] = v }
        o.on("-t", "--threads N", Integer,
             "Requests run at once per worker (#{DEFAULTS[:threads]}); one thread runs them",
             "while none blocks, more wake when one does (0 means 1)") { |v| options[:threads] = v }
        o.on("-s", "--secure", "Serve HTTPS (needs -c and -k)") { options[:secure] = true }
        o.on("-a", "--ca-file FILE", "CA certificate file") { |v| options[:ca_file] = v }
        o.on("-c", "--cert-file FILE", "Certificate file") { |v| options[:cert_file] = v }
        o.on("-k", "--key-file FILE", "Private key file") { |v| options[:key_file] = v }
        o.on("-l", "--log-file FILE", "Write the server log to FILE (stderr)") { |v| options[:log_file] = v }
        o.on("-P", "--pid-file FILE", "Write the process id to FILE") { |v| options[:pid_file] = v }
        o.on("--[no-]preload", "Load the app in the master before forking workers (on); off:",
             "each worker loads it, so USR1 restarts them one by one on new code") { |v| options[:preload] = v }
        o.on("--worker-timeout SECONDS", Float, "A worker silent this long is killed and replaced (#{DEFAULTS[:worker_timeout]})") { |v| options[:worker_timeout] = v }
        o.separator ""
        o.separator "Limits and timeouts (sizes in bytes, times in seconds):"
        o.on("--max-head-size BYTES", Integer, "Request line + headers; larger gets 431 (#{DEFAULTS[:max_head_size]})") { |v| options[:max_head_size] = v }
        o.on("--max-headers N", Integer, "Header fields per request; more gets 431 (#{DEFAULTS[:max_headers]})") { |v| options[:max_headers] = v }
        o.on("--max-body-size BYTES", Integer, "Request body; larger gets 413, 0 for no limit (#{DEFAULTS[:max_body_size]})") { |v| options[:max_body_size] = v }
        o.on("--spool-threshold BYTES", Integer, "Bodies larger than this go to a temp file (#{DEFAULTS[:spool_threshold]})") { |v| options[:spool_threshold] = v }
        o.on("--head-timeout SECONDS", Float, "To receive the request head; then 408 (#{DEFAULTS[:head_timeout]})") { |v| options[:head_timeout] = v }
        o.on("--body-timeout SECONDS", Float, "Longest pause while a body arrives; then 408 (#{DEFAULTS[:body_timeout]})") { |v| options[:body_timeout] = v }
        o.on("--keepalive-timeout SECONDS", Float, "Idle keep-alive connection is closed after (#{DEFAULTS[:keepalive_timeout]})") { |v| options[:keepalive_timeout] = v }
        o.on("--write-timeout SECONDS", Float, "Longest wait for a client to read (#{DEFAULTS[:write_timeout]})") { |v| options[:write_timeout] = v }
        o.on("--max-pipeline N", Integer, "Pipelined responses held before writing (#{DEFAULTS[:max_pipeline]})") { |v| options[:max_pipeline] = v }
        o.on("--shutdown-timeout SECONDS", Float, "In-flight requests get this long on stop (#{DEFAULTS[:shutdown_timeout]})") { |v| options[:shutdown_timeout] = v }
        o.separator ""
        o.on("-v", "--version", "Print the version") do
          @out.puts "UP! #{Up::VERSION}"
          @printed = true
        end
        o.on("-h", "--help", "Print this help") do
          @out.puts o
          @printed = true
        end
      end
    end
  end
end
