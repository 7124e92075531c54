# frozen_string_literal: true

require "json"
require "open3"
require_relative "server_process"

module Bench
  # Runs bench/ws_load, the WebSocket load client in C (bench/ws_load/main.c), against a server on
  # 127.0.0.1 in one of the WebSocket tables' shapes, keeps its raw output in a file and parses its JSON
  # line into a WsLoad::Result, which answers what Bench::Runner and Bench::Report read of a
  # Wrk::Result (requests_per_sec, requests, p50, p99, errors) and more. Created once by
  # Bench::Runner; owns nothing between runs.
  class WsLoad
    # A run that produced no report (could not start, crashed, was killed).
    class Error < StandardError; end

    DIR = File.expand_path("../../ws_load", __dir__)
    BINARY = File.join(DIR, "ws_load")

    # The shapes: 100 echo clients with 512-byte messages; 1,000 subscribers of one
    # channel; 10,000 idle connections. Broadcast messages are small, as chat messages are.
    SHAPES = {
      "echo" => { connections: 100, size: 512 },
      "broadcast" => { connections: 1000, size: 64 },
      "idle" => { connections: 10_000, size: 64 }
    }.freeze
    # Messages in flight for the broadcast publisher (bench/run --ws-window).
    DEFAULT_WINDOW = 8
    # Idle connections that must still echo after the hold.
    SAMPLE = 100
    # The check before a server is measured: a few connections for a moment.
    CHECK_CONNECTIONS = 4
    CHECK_SECONDS = 0.5
    # Beyond its duration, how long ws_load may take (opening 10,000 connections, draining the
    # broadcast's messages in flight, the idle sample) before it is killed.
    GRACE = 120

    # Times in microseconds, as Wrk::Result's. requests: the operations counted (round trips,
    # deliveries, or handshakes for idle); requests_per_sec: those a second. client_cpu: the
    # client's CPU seconds (getrusage); client_wall: the seconds it ran. kinds: the client's error counts by kind (zeros
    # included). rss_held_kb: the server's RSS read at the end of an idle hold (set by Runner).
    Result = Struct.new(:mode, :requests_per_sec, :requests, :p50, :p99, :kinds, :lost, :duplicates,
                        :out_of_order, :window, :client_cpu, :client_wall, :connections, :opened, :still_open,
                        :sample, :sample_echoed, :first_error, :path, :rss_held_kb, keyword_init: true) do
      def non_2xx_3xx
        0
      end

      # Every error of the run by kind, zeros left out: the client's, and the broadcast's
      # messages lost, duplicated or out of order (each must be 0).
      def errors
        counts = kinds.select { |_, n| n.positive? }
        { "lost" => lost, "duplicates" => duplicates, "out of order" => out_of_order }.each do |kind, n|
          counts[kind] = n if n.to_i.positive?
        end
        counts
      end

      def unit
        { "echo" => "round trips/s", "broadcast" => "deliveries/s", "idle" => "handshakes/s" }.fetch(mode)
      end
    end

    # What the client's own file limit cannot open, the servers it talks to cannot accept
    # either: bench/run raises its limit before starting them, for ws_idle. nil, or why not.
    def self.raise_file_limit(connections = SHAPES.fetch("idle")[:connections])
      need = connections + (connections / 8) + 200
      _soft, hard = Process.getrlimit(:NOFILE)
      if hard < need
        begin
          Process.setrlimit(:NOFILE, need, need)
          return nil
        rescue Errno::EPERM
          return "the hard file limit (#{hard}) is below the #{need} #{connections} connections need"
        end
      end
      Process.setrlimit(:NOFILE, hard)
      nil
    end

    attr_reader :window

    def initialize(window: DEFAULT_WINDOW)
      @window = window
    end

    # The argv of one run: mode "echo", "broadcast" or "idle"; seconds measured (held, for idle).
    def argv(mode, port, seconds, connections: nil)
      shape = SHAPES.fetch(mode)
      argv = [BINARY, mode, "--port", port.to_s, "-c", (connections || shape[:connections]).to_s,
              "-s", shape[:size].to_s]
      case mode
      when "echo" then argv + ["-d", seconds.to_s]
      when "broadcast" then argv + ["-d", seconds.to_s, "-w", @window.to_s]
      else argv + ["--hold", seconds.to_s, "--sample", SAMPLE.to_s, "--sync"]
      end
    end

    # The argv shown in the report, with PORT for the port.
    def shown_argv(mode, seconds)
      ["bench/ws_load/ws_load", *argv(mode, "PORT", seconds).drop(1)]
    end

    # Runs ws_load against 127.0.0.1:port, writes its output to out_path, returns a Result.
    # For idle, the block is called once the connections have been held, while they are all
    # still open; its value becomes the result's rss_held_kb. Raises Error without a report.
    def run(mode, port, seconds, out_path, connections: nil, &held)
      deadline = now + seconds + GRACE
      lines = []
      File.open(out_path, "w") do |log|
        Open3.popen2(*argv(mode, port, seconds, connections: connections), err: log) do |stdin, stdout, wait|
          begin
            rss = read_lines(stdout, stdin, deadline, lines, held)
            status = wait_exit(wait, deadline)
          ensure
            ServerProcess.kill_child(wait.pid) if wait.alive?
          end
          log.puts(lines)
          report = lines.map { |l| parse_line(l) }.compact.find { |h| h.key?("mode") }
          raise Error, "ws_load (exit #{status.exitstatus.inspect}) printed no report" unless report

          result = self.class.parse(report, out_path)
          result.rss_held_kb = rss
          return result
        end
      end
    end

    # A short run with a few connections: the server must upgrade, echo or broadcast, and
    # break no rule of the protocol. Returns nil, or what was wrong.
    def check(mode, port, out_path)
      mode = "echo" if mode == "idle"
      result = run(mode, port, CHECK_SECONDS, out_path, connections: CHECK_CONNECTIONS)
      return nil if result.requests.positive? && result.errors.empty?

      errors = result.errors.map { |k, n| "#{k} #{n}" }.join(", ")
      "no WebSocket #{mode} (#{result.requests} #{result.unit.delete_suffix("/s")}" \
        "#{", errors: #{errors}" unless errors.empty?})#{": #{result.first_error}" unless result.first_error.empty?}"
    rescue Error => e
      e.message
    end

    def self.parse(hash, path = nil)
      mode = hash.fetch("mode")
      ops = { "echo" => "round_trips", "broadcast" => "deliveries", "idle" => "opened" }.fetch(mode)
      Result.new(mode: mode, requests_per_sec: hash.fetch("per_s").to_f, requests: hash.fetch(ops).to_i,
                 p50: hash["latency_p50_us"], p99: hash["latency_p99_us"], kinds: hash.fetch("errors"),
                 lost: hash["lost"].to_i, duplicates: hash["duplicates"].to_i, out_of_order: hash["out_of_order"].to_i,
                 window: hash["window"], client_cpu: hash.fetch("cpu_s").to_f,
                 client_wall: hash.fetch("wall_s").to_f, connections: hash["connections"],
                 opened: hash["opened"], still_open: hash["still_open"], sample: hash["sample"],
                 sample_echoed: hash["sample_echoed"], first_error: hash["first_error"].to_s, path: path)
    end

    private

    # Reads ws_load's stdout into lines until it ends; answers an idle "held" line by calling
    # held and then writing a line to ws_load's stdin. Returns what held returned.
    def read_lines(stdout, stdin, deadline, lines, held)
      rss = nil
      loop do
        ready = IO.select([stdout], nil, nil, [deadline - now, 0].max)
        raise Error, "ws_load did not finish in time" unless ready

        line = stdout.gets or break
        lines << line.chomp
        next unless parse_line(line)&.fetch("phase", nil) == "held"

        rss = held&.call
        stdin.puts
        stdin.flush
      end
      rss
    end

    def wait_exit(wait, deadline)
      sleep 0.01 while wait.alive? && now < deadline
      raise Error, "ws_load did not exit in time" if wait.alive?

      wait.value
    end

    def parse_line(line)
      JSON.parse(line)
    rescue JSON::ParserError
      nil
    end

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
