# frozen_string_literal: true

require "fileutils"
require "net/http"
require "tmpdir"
require_relative "server_process"
require_relative "setup"
require_relative "wrk"

module Bench
  # Measures one peer on one app with one worker count: starts it on a free port, checks one
  # response, runs wrk (warm-up, then the measured runs) and stops it, whatever happens. Created
  # once by bench/run; writes raw wrk outputs and server logs into the results directory.
  class Runner
    # The outcome of one measurement. status: :ok, :failed (did not start, answered wrongly,
    # or wrk got nothing) or :not_installed; reason then says why ("failed to start: ...").
    # result: the median run's Wrk::Result. errors: every error wrk counted over all runs,
    # warm-up included. command: the argv that started it, on port.
    Row = Struct.new(:peer, :app, :workers, :status, :reason, :result, :runs, :errors, :notes,
                     :command, :port, keyword_init: true) do
      def ok?
        status == :ok
      end
    end

    # The server's answer to the first request was not the app's.
    class WrongAnswer < StandardError; end

    # What a correct answer looks like, per app: a server failing this is not measured.
    EXPECTED = {
      "hello" => ->(body) { body == "Hello World" },
      "env_to_s" => ->(body) { body.start_with?("{") },
      "body_100k" => ->(body) { body.bytesize == 102_400 }
    }.freeze

    def initialize(root:, results_dir:, options:, setup:, ruby_env:)
      @root = root
      @results_dir = results_dir
      @options = options
      @setup = setup
      @ruby_env = ruby_env
      @wrk = Wrk.new(connections: options.connections)
    end

    attr_reader :wrk

    def measure(peer, app, workers)
      row = Row.new(peer: peer, app: app, workers: workers, runs: [], errors: {}, notes: [peer.note].compact)
      if (reason = @setup.unavailable[peer.key])
        row.status = reason.start_with?("not installed") ? :not_installed : :failed
        row.reason = reason
        return row
      end

      dir = Dir.mktmpdir("up-bench-")
      server = nil
      begin
        port = row.port = ServerProcess.free_port
        context = Peer::Context.new(port: port, app: "test/rackup/#{app}.ru", workers: workers, dir: dir)
        argv = peer.command(context)
        row.command = argv.map { |a| a.to_s.sub(dir, "$TMP") }
        server = ServerProcess.new(argv: argv, env: env_for(peer), chdir: @root, port: port,
                                   log_path: result_path(row, "server.log"))
        server.start
        check_response(port, app)
        load(row, "http://127.0.0.1:#{port}/")
        row.notes << "server died during the run: #{server.log_tail}" unless server.alive?
      rescue ServerProcess::StartError => e
        fail_row(row, "failed to start: #{e.message}")
      rescue WrongAnswer, Wrk::Error, SystemCallError, IOError, Timeout::Error, Net::HTTPBadResponse, Net::ProtocolError => e
        exited = server && !server.alive? ? "; server exited: #{server.log_tail}" : ""
        fail_row(row, "failed: #{e.message}#{exited}")
      ensure
        row.notes << "did not stop on TERM within #{ServerProcess::STOP_TIMEOUT} s" if server&.stop == :kill
        FileUtils.rm_rf(dir)
      end
      row
    end

    private

    # reason: "failed to start: why" or "failed: why"; the report splits it at the colon.
    def fail_row(row, reason)
      row.status = :failed
      row.reason = reason
    end

    # Warm-up, then the measured runs; the row gets the median run and every error.
    def load(row, url)
      if @options.warmup.positive?
        add_errors(row, @wrk.run(url, @options.warmup, result_path(row, "warmup.txt")))
      end
      @options.runs.times do |i|
        result = @wrk.run(url, @options.duration, result_path(row, "run#{i + 1}.txt"))
        add_errors(row, result)
        row.runs << result
      end
      # The lower median when the number of runs is even.
      row.result = row.runs.sort_by(&:requests_per_sec)[(row.runs.size - 1) / 2]
      row.status = :ok
    end

    def add_errors(row, result)
      result.errors.each { |kind, n| row.errors[kind] = row.errors.fetch(kind, 0) + n }
    end

    # One GET before any load: the server must answer the app's request correctly.
    def check_response(port, app)
      response = Net::HTTP.start("127.0.0.1", port, open_timeout: 10, read_timeout: 30) do |http|
        http.get("/")
      end
      body = response.body.to_s
      return if response.code == "200" && EXPECTED.fetch(app).call(body)

      raise WrongAnswer, "wrong answer to GET /: status #{response.code}, #{body.bytesize} bytes: #{body[0, 80].inspect}"
    end

    def env_for(peer)
      env = Setup.clean_env
      case peer.runtime
      when :up then env.merge(@ruby_env).merge("BUNDLE_GEMFILE" => File.join(@root, "Gemfile"))
      when :peer then env.merge(@ruby_env).merge(@setup.bench_bundle_env)
      else env
      end
    end

    def result_path(row, name)
      File.join(@results_dir, "#{row.app}-w#{row.workers}-#{row.peer.key}-#{name}")
    end
  end
end
