# frozen_string_literal: true

require "tmpdir"
require_relative "raw_http"
require_relative "scenario"
require_relative "server_process"

module Bench
  # bench/slow_call: does a fast request wait behind slow app calls? For each UP! mode, on
  # test/rackup/slow_fast.ru: send `slow` GET /slow (each sleeps 1 s in the app) on their own
  # connections, wait until they have reached the app, then time one GET /fast on a new
  # connection (connect to last byte); repeat. The app appends a line to SLOW_CALL_LOG as each
  # /slow call starts, which is how the script knows they are in, with no blind sleep. Created
  # by the script; owns the connections of the round it is running.
  class SlowCall
    APP = "test/rackup/slow_fast.ru"
    # How long after the last /slow request the script waits for all of them to reach the app.
    # With threads they arrive within milliseconds; a mode that runs one call at a time
    # (-t 0, -t 1) never lets them all in, so the wait must end: 0.3 s, well inside the 1 s
    # sleep of the calls already in, and the table says how many were in.
    SETTLE = 0.3
    SLOW_SECONDS = 1
    # The target: with default settings, /fast answers in under 50 ms (the slowest round counts).
    TARGET_MS = 50
    LOG_LINE = "slow\n"

    # fast: seconds of each round's /fast. inside: /slow calls in the app when /fast was sent,
    # per round. error: why there are no figures.
    Row = Struct.new(:peer, :fast, :inside, :error, keyword_init: true)

    def initialize(scenario, peers, slow:, rounds:)
      @scenario = scenario
      @peers = peers
      @slow = slow
      @rounds = rounds
    end

    def run
      @peers.map do |peer|
        $stdout.print "#{peer.mode(1)}: "
        $stdout.flush
        row = measure(peer)
        $stdout.puts(row.error || "/fast #{row.fast.map { |s| ms(s) }.join(", ")}")
        row
      end
    end

    def markdown(rows)
      out = @scenario.header("Slow calls: does /fast wait behind #{@slow} calls that sleep #{SLOW_SECONDS} s?", [
        "App: `#{APP}`: `/slow` sleeps #{SLOW_SECONDS} s, `/fast` answers at once; one worker (`-w 1`).",
        "Each of #{@rounds} rounds: #{@slow} GET /slow on #{@slow} connections; once the app has logged " \
        "them all (or #{SETTLE} s after the last was sent), one GET /fast on a new connection, timed " \
        "from connect to its last byte; then the /slow answers are read and checked.",
        "/slow in the app: how many /slow calls the app had started when /fast was sent (min–max " \
        "over the rounds); a mode that runs one call at a time lets only one in."
      ])
      out << "| server | mode | /fast median | /fast max | /slow in the app | notes |\n"
      out << "|---|---|--:|--:|--:|---|\n"
      rows.each { |row| out << "| #{cells(row).join(" | ")} |\n" }
      out << verdict(rows)
    end

    private

    def measure(peer)
      row = Row.new(peer: peer, fast: [], inside: [])
      if (reason = @scenario.unavailable(peer))
        row.error = reason
        return row
      end
      Dir.mktmpdir("up-bench-slow-call-") do |dir|
        log = File.join(dir, "calls.log")
        File.write(log, "")
        @scenario.with_server(peer, app: APP, label: "calls", env: { "SLOW_CALL_LOG" => log }) do |server|
          warm_up(server.port)
          @rounds.times { round(row, server.port, log) }
        end
      end
      row
    rescue ServerProcess::StartError => e
      failed(row, "failed to start: #{e.message}")
    rescue Scenario::Failure, RawHTTP::Error, SystemCallError, IOError => e
      failed(row, "failed: #{e.message}")
    end

    def failed(row, reason)
      row.error = reason
      row
    end

    # A few /fast on one connection: checks the answer, warms up.
    def warm_up(port)
      socket = RawHTTP.connect(port)
      20.times do
        socket.write(RawHTTP.get("/fast"))
        RawHTTP.check("/fast", RawHTTP.read_response(socket, now + 10), "/fast")
      end
    ensure
      socket&.close
    end

    def round(row, port, log)
      started = calls(log)
      slow = Array.new(@slow) { RawHTTP.connect(port) }
      slow.each { |s| s.write(RawHTTP.get("/slow")) }
      row.inside << settle(log, started)
      row.fast << time_fast(port)
      deadline = now + (@slow * SLOW_SECONDS) + 10
      slow.each { |s| RawHTTP.check("/slow", RawHTTP.read_response(s, deadline), "/slow") }
    ensure
      slow&.each(&:close)
    end

    # Polls the app's log until every /slow of this round has started, or SETTLE has passed;
    # returns how many had.
    def settle(log, started)
      deadline = now + SETTLE
      loop do
        inside = calls(log) - started
        return inside if inside >= @slow || now > deadline

        sleep 0.002
      end
    end

    def calls(log)
      File.size(log) / LOG_LINE.bytesize
    end

    def time_fast(port)
      t0 = now
      socket = RawHTTP.connect(port)
      socket.write(RawHTTP.get("/fast"))
      RawHTTP.check("/fast", RawHTTP.read_response(socket, t0 + (@slow * SLOW_SECONDS) + 10), "/fast")

      now - t0
    ensure
      socket&.close
    end

    def cells(row)
      head = [row.peer.name, row.peer.mode(1)]
      return head + ["", "", "", row.error.to_s.gsub("|", "\\|")] if row.error

      sorted = row.fast.sort
      inside = row.inside.minmax.uniq.join("–")
      head + [ms(sorted[(sorted.size - 1) / 2]), ms(sorted.last), "#{inside} of #{@slow}", ""]
    end

    def verdict(rows)
      default = rows.find { |r| r.peer.key == "up_default" }
      return "" unless default

      head = "\nThe target: with default settings (#{default.peer.mode(1)}), /fast in under " \
             "#{TARGET_MS} ms in every round"
      return "#{head}: not measured (#{default.error}).\n" if default.error

      worst = default.fast.max * 1000
      "#{head}: slowest #{format("%.1f", worst)} ms, #{worst < TARGET_MS ? "met" : "**missed**"}.\n"
    end

    def ms(seconds)
      v = seconds * 1000
      v < 10 ? format("%.2f ms", v) : format(v < 100 ? "%.1f ms" : "%.0f ms", v)
    end

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
