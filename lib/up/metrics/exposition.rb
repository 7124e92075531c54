# frozen_string_literal: true

require_relative "../process_memory"

module Up
  module Metrics
    # The Prometheus text format (version 0.0.4) of a runner's stats: one family per metric,
    # each with its HELP and TYPE lines, one sample per worker (label worker="N"; "0" for a
    # single process). Made by Up::Metrics::App for each scrape, from Up::Single#stats or
    # Up::Cluster#stats: in a cluster the workers' numbers are those of their last heartbeat.
    class Exposition
      CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

      # Per-worker gauges and counters from Up::Server#stats: name, type, stats key, help.
      PER_WORKER = [
        ["up_connections", "gauge", :connections, "Open client connections"],
        ["up_websocket_clients", "gauge", :websockets, "Open WebSocket connections"],
        ["up_sse_clients", "gauge", :event_streams, "Open server-sent event streams"],
        ["up_busy_threads", "gauge", :busy, "App threads inside a request"],
        ["up_threads", "gauge", :threads, "App threads"],
        ["up_queued_requests", "gauge", :backlog, "Requests waiting for an app thread"],
        ["up_pubsub_subscriptions", "gauge", :subscriptions, "Pub/sub subscriptions"],
        ["up_pubsub_published_total", "counter", :published, "Pub/sub messages fanned out"],
        ["up_messages_out_total", "counter", :messages_out, "WebSocket and SSE messages written"],
        ["up_websocket_messages_in_total", "counter", :messages_in, "WebSocket messages received"],
        ["up_loop_switches_total", "counter", :loop_switches,
         "Moves of the worker's loop between its app threads and a thread of its own"]
      ].freeze

      # stats: a runner's #stats; ready: whether the readiness probe says so.
      def initialize(stats, ready:)
        @stats = stats
        @ready = ready
        @out = +""
      end

      def to_s
        workers = worker_stats
        family("up_ready", "gauge", "1 while the server takes requests, 0 once a stop begins")
        sample("up_ready", {}, @ready ? 1 : 0)
        family("up_workers", "gauge", "Worker processes asked for")
        sample("up_workers", {}, @stats[:workers])
        family("up_workers_booted", "gauge", "Worker processes serving")
        sample("up_workers_booted", {}, @stats.fetch(:booted_workers, 1))
        family("up_worker_restarts_total", "counter", "Workers started again after the first")
        workers.each { |w| sample("up_worker_restarts_total", w[:labels], w[:restarts]) }
        family("up_worker_memory_replacements_total", "counter", "Workers replaced for passing --worker-max-rss")
        sample("up_worker_memory_replacements_total", {}, @stats.fetch(:memory_replacements, 0))
        family("up_reforks_total", "counter", "Workers made the template of the next workers (--refork-after)")
        sample("up_reforks_total", {}, @stats.fetch(:reforks, 0))
        family("up_resident_memory_bytes", "gauge", "Resident memory of each worker process")
        workers.each { |w| (rss = ProcessMemory.rss(w[:pid])) && sample("up_resident_memory_bytes", w[:labels], rss) }
        requests(workers)
        durations(workers)
        PER_WORKER.each do |name, type, key, help|
          family(name, type, help)
          workers.each { |w| sample(name, w[:labels], w[:status].fetch(key, 0)) }
        end
        loop_placement(workers)
        @out
      end

      private

      # [{ labels:, pid:, restarts:, status: Up::Server#stats }, ...]
      def worker_stats
        if @stats[:worker_status]
          @stats[:worker_status].map do |w|
            { labels: { worker: w[:index] }, pid: w[:pid], restarts: w[:restarts], status: w[:last_status] || {} }
          end
        else
          [{ labels: { worker: 0 }, pid: @stats[:pid], restarts: 0, status: @stats }]
        end
      end

      def requests(workers)
        family("up_requests_total", "counter", "Responses sent, by status (0: closed before a status was sent)")
        workers.each do |w|
          (w[:status][:statuses] || {}).each do |code, n|
            sample("up_requests_total", w[:labels].merge(status: code), n)
          end
        end
      end

      def durations(workers)
        name = "up_request_duration_seconds"
        family(name, "histogram", "Time from a request's start to its response handed to the loop")
        workers.each do |w|
          s = w[:status]
          next unless s[:duration_buckets]

          total = 0
          s[:duration_buckets].each_with_index do |n, i|
            total += n
            le = i < s[:duration_bounds].size ? s[:duration_bounds][i] : "+Inf"
            sample("#{name}_bucket", w[:labels].merge(le: le), total)
          end
          sample("#{name}_sum", w[:labels], s[:duration_sum])
          sample("#{name}_count", w[:labels], total)
        end
      end

      # Where each worker's loop runs now (Up::Server#stats' loop_mode), and what the app calls
      # last measured spent on the CPU (app_cpu_share, once measured).
      def loop_placement(workers)
        family("up_loop_io_thread", "gauge", "1 while the worker's loop runs on a thread of its own, 0 on its app threads")
        workers.each { |w| sample("up_loop_io_thread", w[:labels], w[:status][:loop_mode] == "io_thread" ? 1 : 0) }
        family("up_app_cpu_share", "gauge", "CPU time over wall time of the app calls last measured")
        workers.each { |w| (share = w[:status][:app_cpu_share]) && sample("up_app_cpu_share", w[:labels], share) }
      end

      def family(name, type, help)
        @out << "# HELP #{name} #{help}\n# TYPE #{name} #{type}\n"
      end

      def sample(name, labels, value)
        pairs = labels.map { |k, v| "#{k}=\"#{v}\"" }
        @out << name << (pairs.empty? ? "" : "{#{pairs.join(",")}}") << " " << value.to_s << "\n"
      end
    end
  end
end
