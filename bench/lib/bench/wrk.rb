# frozen_string_literal: true

require_relative "server_process"

module Bench
  # Runs wrk (Debian's; keep-alive connections; the threads and connections bench/run's --load
  # asks for) against a URL on 127.0.0.1 for a bounded time, keeps its raw output in a file and
  # parses it into a Wrk::Result. Created once by Bench::Runner; owns nothing between runs.
  class Wrk
    # A wrk run that produced no numbers (could not connect, crashed, was killed).
    class Error < StandardError; end

    # Times are in microseconds. socket_errors: {"connect" => n, "read" => n, ...}.
    Result = Struct.new(:requests_per_sec, :requests, :p50, :p99, :socket_errors, :non_2xx_3xx,
                        :path, keyword_init: true) do
      # Every error wrk counted, by kind, zeros left out.
      def errors
        counts = socket_errors.select { |_, n| n.positive? }
        counts = counts.merge("non-2xx/3xx" => non_2xx_3xx) if non_2xx_3xx.positive?
        counts
      end
    end

    UNITS = { "us" => 1.0, "ms" => 1_000.0, "s" => 1_000_000.0, "m" => 60_000_000.0 }.freeze
    # Beyond its duration, how long wrk may take to finish before it is killed.
    GRACE = 30

    attr_reader :threads, :connections

    def initialize(connections:, threads: 1)
      @threads = threads
      @connections = connections
    end

    # The argv of one run (also what the report shows); headers: fields every request carries.
    def argv(url, seconds, headers: {})
      %W[wrk -t#{@threads} -c#{@connections} -d#{seconds}s --latency] +
        headers.flat_map { |name, value| ["-H", "#{name}: #{value}"] } + [url]
    end

    # Runs wrk for the given seconds, writes its output to out_path, returns a Result.
    # Raises Error when wrk printed no Requests/sec line.
    def run(url, seconds, out_path, headers: {})
      pid = Process.spawn(*argv(url, seconds, headers: headers), in: File::NULL, out: out_path, err: %i[child out])
      status = ServerProcess.wait_child(pid, seconds + GRACE) or
        raise Error, "wrk did not finish within #{seconds + GRACE} s"
      pid = nil
      text = File.read(out_path)
      result = self.class.parse(text, out_path)
      raise Error, "wrk (exit #{status.exitstatus.inspect}): #{text.lines.last.to_s.strip}" unless result

      result
    ensure
      ServerProcess.kill_child(pid) if pid
    end

    # Parses wrk's report; nil if it has no Requests/sec line.
    def self.parse(text, path = nil)
      rps = text[%r{^Requests/sec:\s+([\d.]+)}, 1] or return nil

      socket = { "connect" => 0, "read" => 0, "write" => 0, "timeout" => 0 }
      if (m = text.match(/Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/))
        socket = socket.keys.zip(m.captures.map(&:to_i)).to_h
      end
      Result.new(requests_per_sec: rps.to_f,
                 requests: text[/(\d+) requests in/, 1].to_i,
                 p50: latency(text, "50%"), p99: latency(text, "99%"),
                 socket_errors: socket,
                 non_2xx_3xx: text[/Non-2xx or 3xx responses: (\d+)/, 1].to_i,
                 path: path)
    end

    # One percentile line of the "Latency Distribution" block, in microseconds.
    def self.latency(text, percentile)
      m = text.match(/^\s+#{Regexp.escape(percentile)}\s+([\d.]+)(us|ms|s|m)\s*$/) or return nil
      m[1].to_f * UNITS.fetch(m[2])
    end
  end
end
