# frozen_string_literal: true

require "fileutils"
require "net/http"
require "tmpdir"
require_relative "app_services"
require_relative "apps"
require_relative "proc_fs"
require_relative "server_process"
require_relative "setup"
require_relative "tally"
require_relative "wrk"
require_relative "ws_load"

module Bench
  # Measures one table (one app, one worker count) with its servers' runs interleaved: starts
  # every server of the table, each on a free port, and checks one response from each; warms
  # them up in turn; then runs wrk in rounds, each round measuring every server once; and stops
  # them all, whatever happens. So a minute when the machine is slow hits one run of every
  # server instead of every run of one. Created once by bench/run; writes raw wrk outputs and
  # server logs into the results directory.
  class Runner
    # One server in the table. status: :ok, :failed (did not start, answered wrongly, wrk got
    # nothing, or it exited) or :not_installed; nil until its first measured run. reason then
    # says why ("failed to start: ..."). result: the median of its runs so far (Wrk::Result).
    # errors: every error wrk counted over all its runs, warm-up included. command: the argv
    # that started it, on port. cpu (a Tally): the CPU seconds its processes used during its
    # measured runs (not the warm-up) against the requests wrk counted in those runs, over the
    # runs where both readings of /proc succeeded. redis_gets (a Tally, json_api only): the
    # GETs Redis served during its measured runs against the successful (2xx/3xx) responses wrk
    # counted in them, over the runs where Redis answered both INFO commands. For the WebSocket
    # apps (Bench::WsLoad), result is a WsLoad::Result and requests are round trips, deliveries
    # or handshakes; client_cpu (a Tally): the load client's own CPU seconds against the same
    # counts, and client_busy (a Tally) against the seconds it ran; rss_idle: the server tree's RSS in KiB before its first measured idle hold, and
    # rss_held: that RSS at the end of each hold.
    Row = Struct.new(:peer, :app, :workers, :status, :reason, :result, :runs, :errors, :notes,
                     :command, :port, :cpu, :redis_gets, :client_cpu, :client_busy, :rss_idle, :rss_held,
                     keyword_init: true) do
      def initialize(**fields)
        super(cpu: Tally.new, redis_gets: Tally.new, client_cpu: Tally.new, client_busy: Tally.new, rss_held: [],
              **fields)
      end

      # The load client's CPU microseconds per operation over the measured runs, or nil.
      def client_cpu_us_per_request
        client_cpu.per&.*(1_000_000)
      end

      # How far the server tree's RSS rose above the idle server, in KiB: the highest reading
      # at the end of a hold against the one before the first (memory a server keeps after a
      # round's connections closed counts against it), or nil.
      def rss_growth_kb
        rss_idle && rss_held.max && (rss_held.max - rss_idle)
      end

      def ok?
        status == :ok
      end

      # CPU microseconds per request over all its measured runs, or nil when none was read.
      def cpu_us_per_request
        cpu.per&.*(1_000_000)
      end

      # Redis GETs per successful response over its measured runs (1.00 for a server that does
      # what json_api asks), or nil when not counted.
      def redis_gets_per_answer
        redis_gets.per
      end

      def failed?
        %i[failed not_installed].include?(status)
      end
    end

    # A running server of the table: its row, its process, its private directory, its URL, and
    # the request fields every request to it carries (the app's, and for a validator app the
    # If-None-Match made from this server's own etag by the first check).
    Entry = Struct.new(:row, :server, :dir, :url, :headers, keyword_init: true)

    # The server's answer to the first request was not the app's.
    class WrongAnswer < StandardError; end

    # The server exited while the table was being measured.
    class Exited < StandardError; end

    # What makes one server fail without stopping the table.
    FAILURES = [WrongAnswer, Exited, Wrk::Error, WsLoad::Error, SystemCallError, IOError, Timeout::Error,
                Net::HTTPBadResponse, Net::ProtocolError].freeze

    # services: the run's Bench::AppServices (Redis, the Rails database).
    def initialize(root:, results_dir:, options:, setup:, ruby_env:, services:)
      @root = root
      @services = services
      @results_dir = results_dir
      @options = options
      @setup = setup
      @ruby_env = ruby_env
      @wrk = Wrk.new(connections: options.connections, threads: options.wrk_threads)
      @ws_load = WsLoad.new(window: options.ws_window)
    end

    attr_reader :wrk, :ws_load

    # Measures peers on app with workers workers. Appends a Row per peer to rows as soon as
    # that peer's turn to start comes, so an interrupted run still reports what it measured.
    # Yields (step, row, result) after each step of each server, for progress lines: step is
    # "start", "warm-up" or "round K/N"; result is that step's Wrk::Result, or nil when there
    # was none (a start, or a failure: the row's reason says which). Stops every server of
    # the table before it returns or raises.
    def measure_table(peers, app, workers, rows, &progress)
      entries = []
      table_rows = []
      peers.each do |peer|
        up_note = Apps.fetch(app).up_note if peer.runtime == :up
        row = Row.new(peer: peer, app: app, workers: workers, runs: [], errors: {}, notes: [peer.note, up_note].compact)
        rows << row
        table_rows << row
        if (entry = prepare(row))
          entries << entry
          start(entry)
        end
        progress&.call("start", row, nil)
      end
      if @options.warmup.positive?
        entries.each { |entry| warm_up(entry, &progress) unless entry.row.failed? }
      end
      measured = entries.reject { |entry| entry.row.failed? }
      @options.runs.times do |round|
        # Each round starts one server further (rotate wraps around), so that no server
        # always runs first, right after the warm-ups, or last.
        measured.rotate(round).each { |entry| run(entry, round, &progress) unless entry.row.failed? }
      end
    ensure
      stop(entries)
      table_rows.each { |row| finish(row) }
    end

    private

    # The row's server, not started yet: its port, command line and directory. nil when it
    # cannot run (the row then says why).
    def prepare(row)
      if (reason = @setup.unavailable[row.peer.key] || @setup.unavailable[row.peer.group] ||
                   @services.unavailable[row.app])
        row.status = reason.start_with?("not installed") ? :not_installed : :failed
        row.reason = reason
        return nil
      end

      dir = Dir.mktmpdir("up-bench-")
      port = row.port = ServerProcess.free_port
      app = Apps.fetch(row.app)
      context = Peer::Context.new(port: port, app: app.path_for(row.peer), workers: row.workers, dir: dir,
                                  up_args: app.up_args, args: app.args_for(row.peer))
      argv = row.peer.command(context)
      row.command = argv.map do |a|
        row.peer.placeholders.reduce(a.to_s.sub(dir, "$TMP")) { |text, (path, name)| text.sub(path, name) }
      end
      server = ServerProcess.new(argv: argv, env: env_for(row.peer, row.app), chdir: @root, port: port,
                                 log_path: result_path(row, "server.log"))
      Entry.new(row: row, server: server, dir: dir, url: "http://127.0.0.1:#{port}#{app.target}",
                headers: app.request_headers.dup)
    end

    # Starts the server and checks its answer to one GET; a server failing either is
    # stopped at once and its row says why.
    def start(entry)
      attempt(entry) do
        entry.server.start
        check_response(entry)
      end
    end

    # The warm-up: load the server gets before the measured runs, for its JIT, caches and
    # pools. Its errors count like those of the runs.
    def warm_up(entry)
      result = attempt(entry) { load(entry, @options.warmup, "warmup.txt", "its warm-up", warm_up: true) }
      yield "warm-up", entry.row, result if block_given?
    end

    # The server's run in round (from 0); the row gets the median of its runs so far, the CPU
    # time its processes used during the run and, for an app on Redis, the GETs Redis served.
    def run(entry, round)
      row = entry.row
      gets = redis_get_calls(row)
      row.rss_idle ||= rss_kb(entry) if Apps.fetch(row.app).ws == "idle"
      cpu = cpu_seconds(entry)
      result = attempt(entry) do
        load(entry, @options.duration, "run#{round + 1}.txt", "round #{round + 1}")
      end
      if result
        after = cpu && cpu_seconds(entry)
        row.cpu.add(after - cpu, result.requests) if after
        if result.is_a?(WsLoad::Result)
          row.client_cpu.add(result.client_cpu, result.requests)
          row.client_busy.add(result.client_cpu, result.client_wall)
          row.rss_held << result.rss_held_kb if result.rss_held_kb
        end
        gets_after = gets && redis_get_calls(row)
        row.redis_gets.add(gets_after - gets, result.requests - result.non_2xx_3xx) if gets_after
        row.runs << result
        # The lower median when the number of runs is even.
        row.result = row.runs.sort_by(&:requests_per_sec)[(row.runs.size - 1) / 2]
        row.status = :ok
      end
      yield "round #{round + 1}/#{@options.runs}", row, result if block_given?
    end

    # One run of the load (wrk, or ws_load for a WebSocket app) against the server; its errors go
    # to the row. The server must be running before and after, or the numbers are not its own.
    # An idle WebSocket run reads the server's RSS at the end of its hold; its warm-up is an echo
    # run instead (handshakes and frames through the server, nothing held).
    def load(entry, seconds, file, step, warm_up: false)
      raise Exited, "exited before #{step}: #{entry.server.log_tail}" unless entry.server.alive?

      ws = Apps.fetch(entry.row.app).ws
      path = result_path(entry.row, file)
      result = if ws
                 mode = warm_up && ws == "idle" ? "echo" : ws
                 @ws_load.run(mode, entry.row.port, seconds, path) { rss_kb(entry) }
               else
                 @wrk.run(entry.url, seconds, path, headers: entry.headers)
               end
      add_errors(entry.row, result)
      raise Exited, "exited during #{step}: #{entry.server.log_tail}" unless entry.server.alive?

      result
    end

    # The CPU time of the server's whole process tree so far (ProcFS.tree_cpu_seconds), or
    # nil when /proc cannot tell (the run then counts in neither sum of the row).
    def cpu_seconds(entry)
      ProcFS.tree_cpu_seconds(entry.server.pid)
    rescue SystemCallError, ArgumentError
      nil
    end

    # The RSS of the server's whole process tree in KiB, or nil when /proc cannot tell.
    def rss_kb(entry)
      ProcFS.tree_rss_kb(entry.server.pid)
    rescue SystemCallError, ArgumentError
      nil
    end

    # Redis's GET count so far when the row's app runs on Redis (json_api), else nil.
    def redis_get_calls(row)
      @services.redis_get_calls if Apps.fetch(row.app).needs?(:redis)
    end

    # Runs the block; if the server fails there, marks its row failed, stops it at once (it
    # takes no part in the rest of the table) and returns nil.
    def attempt(entry)
      yield
    rescue ServerProcess::StartError => e
      fail_entry(entry, "failed to start: #{e.message}")
    rescue *FAILURES => e
      server = entry.server
      exited = !e.is_a?(Exited) && server.pid && !server.alive? ? "; server exited: #{server.log_tail}" : ""
      fail_entry(entry, "failed: #{e.message}#{exited}")
    end

    # reason: "failed to start: why" or "failed: why"; the report splits it at the colon.
    def fail_entry(entry, reason)
      entry.row.status = :failed
      entry.row.reason = reason
      stop([entry])
      nil
    end

    # Stops the servers together and removes their directories; says in a row's notes when
    # its server needed KILL. Entries already stopped are skipped.
    def stop(entries)
      entries = entries.reject { |entry| entry.dir.nil? }
      ServerProcess.stop_together(entries.map(&:server)).each do |server, how|
        row = entries.find { |entry| entry.server.equal?(server) }.row
        row.notes << "did not stop on TERM within #{ServerProcess::STOP_TIMEOUT} s" if how == :kill
      end
      entries.each do |entry|
        FileUtils.rm_rf(entry.dir)
        entry.dir = nil
      end
    end

    # After the table, or after an interrupt: a row that never got a measured run says so,
    # and one that got fewer runs than asked says how many.
    def finish(row)
      if row.status.nil?
        row.status = :failed
        row.reason = "interrupted: before its first measured run"
      elsif row.ok? && row.runs.size < @options.runs
        row.notes << "#{row.runs.size} of #{@options.runs} runs (interrupted)"
      end
    end

    def add_errors(row, result)
      result.errors.each { |kind, n| row.errors[kind] = row.errors.fetch(kind, 0) + n }
    end

    # One GET before any load: the server must answer the app's request correctly. A WebSocket
    # app gets a short ws_load run instead (WsLoad#check): it must upgrade and answer.
    def check_response(entry)
      app = Apps.fetch(entry.row.app)
      port = entry.row.port
      if app.ws?
        problem = @ws_load.check(app.ws, port, result_path(entry.row, "check.txt"))
        raise WrongAnswer, problem if problem

        return
      end
      entry.headers["if-none-match"] = etag_of(app, port) if app.validator == :etag
      response = get(port, app.target, entry.headers)
      body = response.body.to_s
      return if response.code == app.expected_status.to_s && app.expect.call(body)

      raise WrongAnswer, "wrong answer to GET #{app.target}#{headers_text(entry.headers)}: status " \
                         "#{response.code}, #{body.bytesize} bytes: #{body[0, 80].inspect}"
    end

    # The etag of the server's answer to a plain GET of the app's path (a 200 first).
    def etag_of(app, port)
      response = get(port, app.target, {})
      raise WrongAnswer, "wrong answer to GET #{app.target}: status #{response.code}" unless response.code == "200"

      response["etag"] or raise WrongAnswer, "no etag in its answer to GET #{app.target}, so no If-None-Match to send"
    end

    # One GET with these fields, asking for the body uncompressed as wrk does (nothing decoded).
    def get(port, path, headers)
      Net::HTTP.start("127.0.0.1", port, open_timeout: 10, read_timeout: 30) do |http|
        request = Net::HTTP::Get.new(path, { "accept-encoding" => "identity" }.merge(headers))
        http.request(request)
      end
    end

    def headers_text(headers)
      headers.empty? ? "" : " with #{headers.map { |k, v| "#{k}: #{v}" }.join(", ")}"
    end

    # An app with its own bundle (rails) runs every Ruby server from that bundle, but for a
    # peer that serves its files without it (Apps, appless), which gets nothing of the app's.
    def env_for(peer, app)
      env = Setup.clean_env
      return env.merge(@ruby_env).merge(@setup.bench_bundle_env) if Apps.fetch(app).appless?(peer)

      bundle = AppServices.bundle_env(@root, app)
      env = case peer.runtime
            when :up then env.merge(@ruby_env).merge(bundle || { "BUNDLE_GEMFILE" => File.join(@root, "Gemfile") })
            when :peer then env.merge(@ruby_env).merge(bundle || @setup.bench_bundle_env)
            else env
            end
      env.merge(@services.env_for(app))
    end

    def result_path(row, name)
      File.join(@results_dir, "#{row.app}-w#{row.workers}-#{row.peer.key}-#{name}")
    end
  end
end
