# frozen_string_literal: true

require "shellwords"
require_relative "apps"
require_relative "format"
require_relative "options"
require_relative "targets"
require_relative "up_defaults"
require_relative "ws_table"

module Bench
  # Turns the rows of a run into Markdown: a header with everything needed to reproduce it
  # (date, commit, machine, Ruby and YJIT, versions, the command), one table per worker count
  # and app with UP!'s default row checked against the targets under it (Bench::Targets),
  # and the command line of each server. Created by bench/run at the end (or after an
  # interrupt, with what was measured); can write itself into docs/benchmarks.md between the markers.
  class Report
    include Format

    STATUS_LABEL = { not_installed: "not installed", failed: "failed" }.freeze

    # The markers around the section named name (a file can hold several runs' tables).
    def self.markers(name)
      tag = name == "bench" ? "bench" : "bench:#{name}"
      ["<!-- #{tag}:start -->", "<!-- #{tag}:end -->"]
    end

    # baseline: the run's Bench::Baseline (--baseline), or nil. ws_load: the run's Bench::WsLoad,
    # for the WebSocket tables.
    def initialize(machine:, options:, peers:, rows:, wrk:, yjit:, interrupted: false, baseline: nil, ws_load: nil)
      @baseline = baseline
      @ws_load = ws_load
      @machine = machine
      @options = options
      @peers = peers
      @rows = rows
      @wrk = wrk
      @yjit = yjit
      @interrupted = interrupted
    end

    def command_line
      (["bench/run"] + @options.argv).shelljoin
    end

    def markdown
      [header, *tables, commands].join("\n")
    end

    # Replaces what is between the section's markers in the file, or appends a "Benchmarks"
    # section holding them when the file has none.
    def write_into(path, section = "bench")
      start_marker, end_marker = self.class.markers(section)
      text = File.exist?(path) ? File.read(path) : ""
      block = "#{start_marker}\n#{markdown}#{end_marker}"
      start = text.index(start_marker)
      finish = start && text.index(end_marker, start)
      text = if finish
               text[0...start] + block + text[(finish + end_marker.size)..]
             else
               "#{text.chomp}\n\n## Benchmarks\n\n#{block}\n"
             end
      File.write(path, text)
    end

    private

    def header
      ruby = @machine.ruby(@yjit)
      yjit = @yjit ? "every Ruby server ran with `RUBYOPT=--yjit` (YJIT on)" : "YJIT off for every Ruby server"
      lines = []
      lines << "**Interrupted: only part of the run was measured.**\n" if @interrupted
      lines << "Measured #{@machine.date} on commit `#{@machine.commit}` with `#{command_line}`.\n"
      lines << "- Machine: #{@machine.cores} cores (#{@machine.cpu}), #{@machine.kernel}; " \
               "servers and #{http_apps? ? "wrk" : "bench/ws_load"} share them."
      lines << "- Ruby: `#{ruby}`; #{yjit}, and `RACK_ENV=production`."
      lines << "- Load: #{load_shape_text}wrk #{@machine.wrk_version}, `#{@wrk.argv("URL", @options.duration).join(" ")}` " \
               "against 127.0.0.1; #{warmup_text}#{@options.runs} measured " \
               "run#{@options.runs == 1 ? "" : "s"} of #{@options.duration} s per server; " \
               "req/s, p50 and p99 are those of the median run." if http_apps?
      lines << ws_load_text if ws_apps?
      lines << "- Rounds interleaved: all servers of a table are started first and stay up (idle when not " \
               "measured); each is warmed up in turn, then round 1 measures each server once, then " \
               "round 2, and so on, each round starting one server further. So the machine's speed, " \
               "which drifts over minutes here, weighs alike on every server of a table."
      lines << "- Versions: #{versions}."
      if @baseline
        lines << "- Baseline: the row \"UP! @#{@baseline.short}\" is UP! at commit `#{@baseline.short}` " \
                 "(`--baseline #{@baseline.rev}`), checked out in a temporary git worktree, its extension " \
                 "built there with `bundle exec rake compile`, run with the same settings as the default " \
                 "row (no `-t`) and the main Gemfile."
      end
      lines << wrk_columns_text if http_apps?
      lines << ""
      lines.join("\n")
    end

    # What the columns of wrk's tables mean.
    def wrk_columns_text
      "- errors: wrk's socket errors and non-2xx/3xx responses over all runs of that server, " \
        "warm-up included. CPU/req: the CPU time of the server's processes (utime + stime from " \
        "/proc/PID/stat, summed over its whole process tree: master, workers, nginx's workers) " \
        "during all its measured runs, divided by all the requests wrk counted in those runs " \
        "(not the median run's alone: 10 ms ticks are coarse for one run; warm-up left out; " \
        "non-2xx/3xx responses count as requests). With wrk on the same cores, it is what " \
        "decides req/s. #{gets_text}vs UP!: req/s divided by UP!'s with default settings in the " \
        "same table. " \
        "Under each table: UP!'s default row (no `-t`) as a ratio of the fastest other UP! " \
        "mode, the --baseline commit, the limit (nginx) and the peers there, with the targets " \
        "(for the load shape each was set under), and UP!'s CPU/req against each one's. " \
        "How to read the peers' rows: bench/README.md."
    end

    # Said first on the Load line when the run used another shape than the default.
    def load_shape_text
      return "" if @options.default_load?

      "**#{@wrk.threads} wrk thread#{@wrk.threads == 1 ? "" : "s"} and #{@wrk.connections} connections " \
        "(`--load #{@options.load_shape}`), not the default #{default_shape_flags}**: "
    end

    def shape_flags
      "-t#{@wrk.threads} -c#{@wrk.connections}"
    end

    def default_shape_flags
      "-t#{Options::DEFAULT_WRK_THREADS} -c#{Options::DEFAULT_CONNECTIONS}"
    end

    def http_apps?
      @options.apps.any? { |app| !Apps.fetch(app).ws? }
    end

    def ws_apps?
      @options.apps.any? { |app| Apps.fetch(app).ws? }
    end

    # The WebSocket tables: what bench/ws_load does and what their columns mean.
    def ws_load_text
      "- WebSocket load: bench/ws_load (C, one thread on epoll, its own handshake and framing) against " \
        "127.0.0.1, each server warmed up with #{@options.warmup} s of echo, then #{@options.runs} measured " \
        "run#{@options.runs == 1 ? "" : "s"} per server, interleaved in rounds as wrk's are; figures of the " \
        "median run. ws_echo: each connection sends a message and waits for its echo before the next. " \
        "ws_broadcast: a publisher keeps #{@ws_load&.window} messages in flight (sent and not yet received " \
        "by every subscriber), each carrying its sequence number and send time; the app publishes each " \
        "to a channel every subscriber subscribed to, and each subscriber checks it gets every message " \
        "once and in order (lost, duplicate, out of order: must be 0); p50 and p99 are publish to " \
        "receipt over all deliveries. ws_idle: the connections are opened, held #{@options.duration} s " \
        "without traffic, then #{WsLoad::SAMPLE} of them must still echo; RSS is VmRSS summed over " \
        "the server's process tree, read before its first hold (RSS idle, after the warm-up) and at the " \
        "end of each hold (RSS held: the highest); growth is the difference. server CPU: utime + stime " \
        "of the server's tree during its measured runs over the operations counted (round trips, " \
        "deliveries, handshakes); client CPU: ws_load's own (getrusage) over the same. errors: " \
        "ws_load's counts by kind (connect, handshake, closed, protocol, mismatch, timeout) over all " \
        "runs of that server, warm-up included; vs UP!: the first column divided by UP!'s default row's."
    end

    def gets_text
      return "" unless @options.apps.any? { |app| Apps.fetch(app).needs?(:redis) }

      "GET/req (json_api): the GET calls Redis served during all the server's measured runs " \
        "(`INFO commandstats`, read before and after each run; the other servers are idle then) " \
        "divided by the successful (2xx/3xx) responses wrk counted in them; json_api does one GET " \
        "per request, so an honest server shows 1.00 (requests still in flight when wrk stops " \
        "add a few GETs, well under 0.01). "
    end

    def warmup_text
      @options.warmup.positive? ? "#{@options.warmup} s warm-up, then " : "no warm-up, "
    end

    def versions
      list = @peers.map do |peer|
        case peer.runtime
        when :up then "UP! #{@machine.up_version}"
        when :native
          if peer.gem.start_with?("npm:")
            name = peer.gem.delete_prefix("npm:")
            "#{name} #{@machine.npm_version(name)} on node #{@machine.native_version("node")}"
          else
            "#{peer.gem} #{@machine.native_version(peer.gem)}"
          end
        else "#{peer.gem} #{@machine.gem_version(peer.gem)}"
        end
      end
      list << "redis-server #{@machine.native_version("redis-server")}" if @options.apps.include?("json_api")
      (list.uniq + ["rack #{@machine.gem_version("rack")}"]).join(", ")
    end

    def tables
      @options.workers.flat_map do |workers|
        @options.apps.filter_map do |app|
          rows = @rows.select { |r| r.workers == workers && r.app == app }
          next if rows.empty?

          Apps.fetch(app).ws? ? WsTable.new(app, rows, @ws_load).markdown : table(app, workers, rows)
        end
      end
    end

    def table(app, workers, rows)
      title = workers == 1 ? "1 worker" : "#{workers} workers"
      title += " (all cores)" if workers == @machine.cores && workers > 1
      # A table under another load shape must not pass for one of the default tables.
      title += ", load `wrk #{shape_flags}` (not the default #{default_shape_flags})" unless @options.default_load?
      baseline = rows.find { |r| r.peer.key == "up_default" && r.ok? }
      out = +"### #{app}.ru, #{title}\n\n"
      redis = Apps.fetch(app).needs?(:redis)
      out << "| server | mode | req/s | CPU/req | p50 | p99 | errors | vs UP! |#{" GET/req |" if redis} notes |\n"
      out << "|---|---|--:|--:|--:|--:|--:|--:|#{"--:|" if redis}---|\n"
      rows.each { |row| out << "| #{cells(row, baseline, redis).join(" | ")} |\n" }
      out << Targets.new(app, workers, rows, shape: @options.load_shape).markdown
      out << "\nnginx is measured on hello.ru only; its row there is the limit.\n" unless app == "hello" || Apps.fetch(app).only
      out
    end

    # redis: whether the table has the GET/req column (json_api).
    def cells(row, baseline, redis)
      head = [row.peer.name, row.peer.mode(row.workers)]
      unless row.ok?
        status, detail = row.reason.split(": ", 2)
        return head + [status, "", "", "", "", "", *("" if redis), cell([detail, *row.notes].compact.join("; "))]
      end

      r = row.result
      ratio = baseline ? format("%.2f×", r.requests_per_sec / baseline.result.requests_per_sec) : "—"
      gets = row.redis_gets_per_answer
      head + [thousands(r.requests_per_sec.round), us(row.cpu_us_per_request), ms(r.p50), ms(r.p99),
              errors(row.errors), ratio, *(gets_cell(gets) if redis),
              cell(row.notes.join("; "))]
    end

    # Anything but one GET per answered request is a server that does not do what the app
    # says (or answers from elsewhere): bold, like the errors.
    def gets_cell(ratio)
      return "?" unless ratio

      text = format("%.2f", ratio)
      text == "1.00" ? text : "**#{text}**"
    end

    # The request fields wrk adds on the apps that ask for some (Range, If-None-Match), and the
    # path of the apps whose path is found at run time (a fingerprinted asset).
    def request_fields_text
      @options.apps.map { |name| Apps.fetch(name) }.reject(&:ws?).filter_map do |app|
        fields = app.request_headers.map { |k, v| "`-H '#{k}: #{v}'`" }
        fields << "`-H 'if-none-match: ETAG'`, ETAG being the etag of the server's own answer to a first GET" if app.validator == :etag
        fields << "the path `#{app.target}`" if app.request_path.respond_to?(:call)
        next if fields.empty?

        "#{app.name}.ru: #{fields.join(", ")}; the first check wants a #{app.expected_status} with the right body.\n\n"
      end.join
    end

    def commands
      out = +"<details><summary>Command lines (PORT: a free port; $TMP: a generated config)</summary>\n\n"
      if http_apps?
        out << "Load, for every server: `#{@wrk.argv("http://127.0.0.1:PORT/", @options.duration).join(" ")}`" \
               "#{@options.default_load? ? "" : " (`--load #{@options.load_shape}`)"}.\n\n"
      end
      out << request_fields_text
      @options.apps.map { |app| Apps.fetch(app).ws }.compact.each do |mode|
        out << "WebSocket load, #{mode}: `#{@ws_load.shown_argv(mode, @options.duration).join(" ")}`#{
          " (warm-up: the echo command)" if mode == "idle"}.\n\n"
      end
      @options.workers.each do |workers|
        next if @rows.none? { |r| r.workers == workers && r.command }

        out << "#{workers == 1 ? "1 worker" : "#{workers} workers"}:\n\n```\n"
        @peers.each do |peer|
          row = @rows.find { |r| r.peer.equal?(peer) && r.workers == workers && r.command }
          next unless row

          line = row.command.join(" ").gsub(/\b#{row.port}\b/, "PORT").gsub("#{UpDefaults::ROOT}/", "")
                    .sub("test/rackup/#{row.app}.ru", "test/rackup/APP.ru")
          out << "#{line}\n"
        end
        out << "```\n\n"
      end
      out << "$BASELINE: the --baseline worktree. " if @baseline
      if ws_apps?
        out << "On the WebSocket apps Falcon runs bench/config/falcon_ws_echo.ru (ws_echo, ws_idle) or " \
               "falcon_ws_broadcast.ru, and node ws is given ws_echo or ws_broadcast. "
      end
      out << "UP! runs with the main Gemfile; the peers with `BUNDLE_GEMFILE=bench/Gemfile`; on rails.ru " \
             "both with examples/rails' (`BUNDLE_WITH=bench` for Puma), in production with a database " \
             "made by `rails db:prepare`. json_api.ru gets `REDIS_URL` of a redis-server bench/run " \
             "starts.\n\n</details>\n"
    end
  end
end
