# frozen_string_literal: true

require "fileutils"
require "shellwords"
require "tmpdir"
require_relative "machine"
require_relative "peer"
require_relative "proc_fs"
require_relative "server_process"
require_relative "setup"

module Bench
  # What bench/slow_reader, bench/slow_call and bench/idle_memory share: installing and building
  # what they need (Bench::Setup, without wrk), the results directory, starting one server at a
  # time on a free 127.0.0.1 port and stopping it whatever happens, finding its worker process,
  # and the header and file of the Markdown report. Created once by each script; owns the
  # results directory and the server it is running.
  class Scenario
    # A server that started but cannot be measured (no single worker process, wrong answer).
    class Failure < StandardError; end

    attr_reader :machine, :results_dir, :name, :yjit

    # name: the report's file name in the results directory (slow_reader.md).
    def initialize(root:, name:, options:)
      @root = root
      @name = name
      @options = options
      @machine = Machine.new(root)
      @results_dir = File.join(root, "bench", "results", @machine.timestamp)
      @unavailable = {}
    end

    # Installs and builds what peers need; returns self. Peers that cannot run are then
    # answered by #unavailable.
    def prepare(peers)
      FileUtils.mkdir_p(@results_dir)
      setup = Setup.new(root: @root, peers: peers, log_path: File.join(@results_dir, "#{@name}-setup.log"),
                        install: @options.install, build: @options.build, wrk: false).run
      @unavailable = setup.unavailable
      @unavailable.each { |key, reason| say "#{key}: #{reason}" }
      @yjit = @options.yjit && @machine.yjit_supported?
      say "YJIT is not available in this ruby: running without it" if @options.yjit && !@yjit
      self
    end

    # Why peer cannot run ("not installed: ...", "failed to start: ..."), or nil.
    def unavailable(peer)
      @unavailable[peer.key]
    end

    # Starts peer with one worker on app (a test/rackup path) and yields the running
    # Bench::ServerProcess; stops it when the block ends or raises. env: extra variables for
    # the server (the app's settings). label: tells apart the logs of one peer's several runs.
    # Raises ServerProcess::StartError when it does not start.
    def with_server(peer, app:, label:, env: {}, connections: nil)
      dir = Dir.mktmpdir("up-bench-")
      port = ServerProcess.free_port
      context = Peer::Context.new(port: port, app: app, workers: 1, dir: dir, connections: connections)
      log_path = File.join(@results_dir, "#{@name}-#{peer.key}-#{label}-server.log")
      server = ServerProcess.new(argv: peer.command(context), env: env_for(peer).merge(env), chdir: @root,
                                 port: port, log_path: log_path)
      server.start
      yield server
    ensure
      server&.stop
      FileUtils.rm_rf(dir) if dir
    end

    # The pid of the server's one worker process (the process that serves, not a wrapper or a
    # master). Call it after a first answer: nginx forks its worker after it listens.
    def worker_pid(server)
      pids = ProcFS.workers(server.pid)
      raise Failure, "expected one worker process, found #{pids.size} (#{pids.join(", ")})" unless pids.size == 1

      pids.first
    end

    # The report's header: when, where, with what, and the command that reproduces it.
    def header(title, lines)
      ruby = @machine.ruby(@yjit)
      yjit = @yjit ? "UP! ran with `RUBYOPT=--yjit` (YJIT on)" : "YJIT off"
      out = +"### #{title}\n\n"
      out << "Measured #{@machine.date} on commit `#{@machine.commit}` with `#{command_line}`.\n\n"
      out << "- Machine: #{@machine.cores} cores (#{@machine.cpu}), #{@machine.kernel}; " \
             "the client and the server share them.\n"
      out << "- Ruby: `#{ruby}`; #{yjit}, and `RACK_ENV=production`. UP! #{@machine.up_version}.\n"
      lines.each { |line| out << "- #{line}\n" }
      out << "\n"
    end

    # Writes the report into the results directory and prints it.
    def write(markdown)
      path = File.join(@results_dir, "#{@name}.md")
      File.write(path, markdown)
      $stdout.puts
      $stdout.puts markdown
      say "written to #{path.delete_prefix("#{@root}/")}"
    end

    def command_line
      (["bench/#{@name}"] + @options.argv).shelljoin
    end

    def say(message)
      $stdout.puts "bench: #{message}"
      $stdout.flush
    end

    private

    def env_for(peer)
      env = Setup.clean_env
      return env unless peer.runtime == :up

      env = env.merge("RACK_ENV" => "production", "BUNDLE_GEMFILE" => File.join(@root, "Gemfile"))
      @yjit ? env.merge("RUBYOPT" => "--yjit") : env
    end
  end
end
