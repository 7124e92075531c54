# frozen_string_literal: true

require_relative "idle_clients"
require_relative "proc_fs"
require_relative "raw_http"
require_relative "scenario"
require_relative "server_process"

module Bench
  # bench/idle_memory: what idle keep-alive connections cost a worker in memory. For each
  # server: start it on test/rackup/hello.ru (nginx answers from its config), warm it up with
  # 200 requests on one connection, read the worker's VmRSS, open `count` connections that each
  # make one request and stay open (Bench::IdleClients), read VmRSS again, check how many are
  # still open and that the server still answers. Created by the script.
  class IdleMemory
    APP = "test/rackup/hello.ru"
    WARM_UP = 200
    # The target: UP! grows by at most 8 MB (of 1,024 KiB, as test/test_idle_connections.rb
    # counts) for 10,000 idle connections; scaled when another count is asked for.
    TARGET_MB = 8.0
    TARGET_CONNECTIONS = 10_000
    # File descriptors beyond the connections: the client's own files, the server's listen
    # socket, logs and libraries.
    SPARE_FILES = 200
    # nginx closes idle keep-alive connections once fewer than 1/16 of its worker_connections
    # are free (ngx_drain_connections), so it gets room for an eighth more than it will hold.
    HEADROOM = 8

    # before, after: worker VmRSS in KiB. open: connections still open after the reading.
    # seconds: how long opening them took. note: a caveat. error: why there are no figures.
    Row = Struct.new(:peer, :before, :after, :open, :seconds, :note, :error, keyword_init: true) do
      def growth_mb
        (after - before) / 1024.0
      end
    end

    def initialize(scenario, peers, count)
      @scenario = scenario
      @peers = peers
      @count = count
    end

    # Each of the client's sockets is a file descriptor, and so is each of the server's (it
    # inherits this process's limits): raises the soft limit to the hard one, and the hard
    # one too when it is too low and this process may (root). Returns nil, or why not.
    def raise_file_limit
      need = files
      _soft, hard = Process.getrlimit(:NOFILE)
      if hard < need
        begin
          Process.setrlimit(:NOFILE, need, need)
          hard = need
        rescue Errno::EPERM
          return "the hard file limit (#{hard}) is below the #{need} needed, and may not be raised here"
        end
      end
      Process.setrlimit(:NOFILE, hard)
      nil
    end

    def run
      @peers.map do |peer|
        $stdout.print "#{peer.name}, #{peer.mode(1)}: "
        $stdout.flush
        row = measure(peer)
        $stdout.puts(row.error || format("%<before>.1f → %<after>.1f MB, %<open>d open",
                                         before: row.before / 1024.0, after: row.after / 1024.0, open: row.open))
        row
      end
    end

    def markdown(rows)
      out = @scenario.header("Idle memory: #{thousands(@count)} idle keep-alive connections", [
        "App: `#{APP}` for UP! (nginx answers from its config); one worker (`-w 1`, " \
        "`worker_processes 1` with `worker_connections #{files}`, room it preallocates, so its " \
        "\"before\" includes it).",
        "Worker VmRSS (/proc/PID/status, MB of 1,024 KiB) after #{WARM_UP} requests on one " \
        "connection, then after #{thousands(@count)} more connections in batches of " \
        "#{IdleClients::BATCH}, each after one GET / (answer read, connection kept open).",
        "still open: connections neither closed nor reset by the server after the reading; " \
        "opening: how long opening them all took.",
        *yjit_note
      ])
      out << "| server | mode | RSS before | RSS after | growth | per connection | still open | opening | notes |\n"
      out << "|---|---|--:|--:|--:|--:|--:|--:|---|\n"
      rows.each { |row| out << "| #{cells(row).join(" | ")} |\n" }
      out << verdict(rows)
    end

    private

    def measure(peer)
      row = Row.new(peer: peer)
      if (reason = @scenario.unavailable(peer))
        row.error = reason
        return row
      end
      @scenario.with_server(peer, app: APP, label: "idle", connections: files) do |server|
        warm_up(server.port)
        pid = @scenario.worker_pid(server)
        row.before = ProcFS.rss_kb(pid)
        hold(row, server.port, pid)
      end
      row
    rescue ServerProcess::StartError => e
      failed(row, "failed to start: #{e.message}")
    rescue Scenario::Failure, RawHTTP::Error, SystemCallError, IOError => e
      failed(row, "failed: #{e.message}")
    end

    # File descriptors (and nginx's worker_connections) for count connections.
    def files
      @count + (@count / HEADROOM) + SPARE_FILES
    end

    def hold(row, port, pid)
      clients = IdleClients.new(port)
      started = now
      clients.open(@count)
      row.seconds = now - started
      row.after = ProcFS.rss_kb(pid)
      row.open = clients.still_open
      still_serving(row, port)
    ensure
      clients&.close
    end

    # One more request on a new connection while it holds them all.
    def still_serving(row, port)
      warm_up(port, 1)
    rescue Scenario::Failure, RawHTTP::Error, SystemCallError, IOError => e
      row.note = "no answer to a new connection while holding them: #{e.message}"
    end

    def failed(row, reason)
      row.before = row.after = nil
      row.error = reason
      row
    end

    def warm_up(port, requests = WARM_UP)
      socket = RawHTTP.connect(port)
      requests.times do
        socket.write(RawHTTP.get("/"))
        RawHTTP.check("/", RawHTTP.read_response(socket, now + 10), "Hello World")
      end
    ensure
      socket&.close
    end

    def cells(row)
      head = [row.peer.name, row.peer.mode(1)]
      return head + ["", "", "", "", "", "", row.error.to_s.gsub("|", "\\|")] if row.error

      per_kb = (row.after - row.before).fdiv(@count)
      head + [mb(row.before), mb(row.after), format("%+.1f MB", row.growth_mb), format("%.2f KiB", per_kb),
              thousands(row.open), format("%.1f s", row.seconds), notes(row)]
    end

    # Ruby with --yjit starts with a large RSS (YJIT's code region), which is not the
    # connections' doing: the growth column is the measure.
    def yjit_note
      return [] unless @scenario.yjit

      ["UP!'s RSS includes YJIT's code region (Ruby with `--yjit` starts large): read the growth, " \
       "or run with `--no-yjit`."]
    end

    def notes(row)
      notes = [row.note]
      notes << "**closed #{thousands(@count - row.open)} of them**" if row.open < @count
      notes.compact.join("; ").gsub("|", "\\|")
    end

    def verdict(rows)
      target = TARGET_MB * @count / TARGET_CONNECTIONS
      lines = rows.select { |r| r.peer.runtime == :up }.map do |row|
        next "- #{row.peer.mode(1)}: not measured (#{row.error})" if row.error

        format("- %<mode>s: %<growth>+.1f MB, %<verdict>s", mode: row.peer.mode(1), growth: row.growth_mb,
                                                            verdict: row.growth_mb <= target ? "met" : "**missed**")
      end
      return "" if lines.empty?

      scaled = @count == TARGET_CONNECTIONS ? "" : format(" (%.2f MB for %s)", target, thousands(@count))
      "\nThe target: UP! grows by at most #{TARGET_MB.round} MB for " \
        "#{thousands(TARGET_CONNECTIONS)} idle connections#{scaled}:\n\n#{lines.join("\n")}\n"
    end

    def mb(kib)
      format("%.1f MB", kib / 1024.0)
    end

    def thousands(number)
      number.to_s.reverse.scan(/\d{1,3}/).join(",").reverse
    end

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
