# frozen_string_literal: true

require "net/http"
require_relative "proc_fs"
require_relative "scenario"
require_relative "server_process"
require_relative "slow_client"

module Bench
  # bench/slow_reader: how much CPU UP!'s worker spends sending a large body to a client that
  # reads slowly, for several body sizes, so that one sees whether it grows with the size or
  # with its square. For each mode and size: a fresh server on test/rackup/array_body.ru, one
  # full-speed GET (checks the answer, warms up), then one Bench::SlowClient download while
  # the worker's CPU time is read before and after: utime + stime, and the run time of each of
  # its threads, which is finer (nanoseconds, not 10 ms ticks). Created by the script.
  class SlowReader
    APP = "test/rackup/array_body.ru"
    MIB = 1024 * 1024
    # The client: 64 KiB every 10 ms, about 6.25 MiB/s, so 50 MiB take about 8 s.
    CHUNK = 64 * 1024
    INTERVAL = 0.010

    # peer: one UP! mode. mib: body size. cpu: seconds the worker's threads ran during the slow
    # download (schedstat). ticks: utime + stime over the same span. wall: the download's
    # seconds. note: a caveat. error: why there are no figures.
    Row = Struct.new(:peer, :mib, :cpu, :ticks, :wall, :note, :error, keyword_init: true)

    def initialize(scenario, peers, sizes)
      @scenario = scenario
      @peers = peers
      @sizes = sizes
    end

    # Seconds the slow downloads take if the client sets the pace.
    def self.expected_seconds(peers, sizes)
      peers.size * sizes.sum * MIB / (CHUNK / INTERVAL)
    end

    def run
      @peers.flat_map do |peer|
        @sizes.map do |mib|
          $stdout.print format("%<mode>s, %<mib>d MiB: ", mode: peer.mode(1), mib: mib)
          $stdout.flush
          row = measure(peer, mib)
          $stdout.puts(row.error || format("%<cpu>.1f ms CPU, %<wall>.1f s", cpu: row.cpu * 1000, wall: row.wall))
          row
        end
      end
    end

    def markdown(rows)
      out = @scenario.header("Slow reader: worker CPU to send an Array body at 6.25 MiB/s", [
        "App: `#{APP}` (an Array of 1 MiB Strings, `ARRAY_BODY_MB` of them, built at load), " \
        "one worker (`-w 1`), a fresh server per row.",
        "Client: one connection, one GET, then at most 64 KiB read every 10 ms until the whole " \
        "body (its content-length, checked) has arrived.",
        "CPU: what the worker's threads ran from just before the request to the last byte, in " \
        "ns (/proc/PID/task/*/schedstat); utime + stime: the same from /proc/PID/stat, in " \
        "#{(1000.0 / ProcFS::TICKS_PER_SECOND).round} ms steps, as a cross-check; wall: the same " \
        "span on the client."
      ])
      out << "| server | mode | body | CPU | CPU per MiB | utime + stime | wall | notes |\n"
      out << "|---|---|--:|--:|--:|--:|--:|---|\n"
      rows.each { |row| out << "| #{cells(row).join(" | ")} |\n" }
      out << growth(rows)
    end

    private

    def measure(peer, mib)
      row = Row.new(peer: peer, mib: mib)
      if (reason = @scenario.unavailable(peer))
        row.error = reason
        return row
      end
      @scenario.with_server(peer, app: APP, label: "#{mib}mib", env: { "ARRAY_BODY_MB" => mib.to_s }) do |server|
        check(server.port, mib)
        pid = @scenario.worker_pid(server)
        client = SlowClient.new(port: server.port, chunk: CHUNK, interval: INTERVAL,
                                timeout: (mib * MIB / (CHUNK / INTERVAL) * 3) + 10)
        ticks = ProcFS.cpu_seconds(pid)
        threads = ProcFS.thread_cpu_ns(pid)
        result = client.run
        row.ticks = ProcFS.cpu_seconds(pid) - ticks
        cpu_since(row, threads, ProcFS.thread_cpu_ns(pid))
        row.wall = result.seconds
        verify(result, mib)
      end
      row
    rescue ServerProcess::StartError => e
      failed(row, "failed to start: #{e.message}")
    rescue Scenario::Failure, SlowClient::Error, SystemCallError, IOError, Net::HTTPBadResponse,
           Net::ProtocolError, Timeout::Error => e
      failed(row, "failed: #{e.message}")
    end

    # A thread that appeared ran entirely within the span; one that ended took its time with
    # it, which the note says (utime + stime still counts it).
    def cpu_since(row, before, after)
      row.cpu = after.sum { |tid, ns| ns - before.fetch(tid, 0) } / 1e9
      ended = before.size - (before.keys & after.keys).size
      row.note = "#{ended} thread(s) ended during the download: CPU misses them" if ended.positive?
    end

    def failed(row, reason)
      row.cpu = row.ticks = row.wall = nil
      row.error = reason
      row
    end

    # One GET at full speed: the right body, and a warmed-up server.
    def check(port, mib)
      response = Net::HTTP.start("127.0.0.1", port, open_timeout: 10, read_timeout: 60) { |http| http.get("/") }
      size = response.body.to_s.bytesize
      return if response.code == "200" && size == mib * MIB

      raise Scenario::Failure, "wrong answer to GET /: status #{response.code}, #{size} bytes"
    end

    def verify(result, mib)
      problems = []
      problems << "status #{result.status}" unless result.status == 200
      problems << "content-length #{result.length}" unless result.length == mib * MIB
      problems << "#{result.body_bytes} body bytes" unless result.body_bytes == mib * MIB
      raise Scenario::Failure, "expected #{mib * MIB} bytes: #{problems.join(", ")}" if problems.any?
    end

    def cells(row)
      head = [row.peer.name, row.peer.mode(1), "#{row.mib} MiB"]
      return head + ["", "", "", "", row.error.to_s.gsub("|", "\\|")] if row.error

      head + [format("%.1f ms", row.cpu * 1000), format("%.2f ms", row.cpu * 1000 / row.mib),
              format("%.0f ms", row.ticks * 1000), format("%.1f s", row.wall), row.note.to_s]
    end

    # Per mode: CPU per MiB at the largest size over the smallest. About 1 when the CPU grows
    # linearly with the body; about largest/smallest when it grows with the square.
    def growth(rows)
      lines = rows.group_by(&:peer).filter_map do |peer, list|
        ok = list.reject(&:error).sort_by(&:mib)
        next if ok.size < 2 || ok.first.cpu.zero?

        small, large = ok.first, ok.last
        ratio = (large.cpu / large.mib) / (small.cpu / small.mib)
        format("- %<mode>s: %<ratio>.1f× (%<small>d → %<large>d MiB; linear ≈ 1×, quadratic ≈ %<q>d×)",
               mode: peer.mode(1), ratio: ratio, small: small.mib, large: large.mib, q: large.mib / small.mib)
      end
      return "" if lines.empty?

      "\nCPU per MiB at the largest body over the smallest, per mode:\n\n#{lines.join("\n")}\n"
    end
  end
end
