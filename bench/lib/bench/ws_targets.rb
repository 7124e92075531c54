# frozen_string_literal: true

require_relative "format"

module Bench
  # The WebSocket targets for UP! with default settings, checked against one
  # WebSocket table of bench/run: round trips a second at least 1.5× Iodine's (`-w 1 -t 1`) on
  # ws_echo; deliveries a second at least 2× Iodine's on ws_broadcast, with the p99 from publish
  # to receipt said beside it; at most 10 MB of RSS above the idle server for 10,000 idle
  # connections on ws_idle (scaled for another count). Created by Bench::WsTable for each
  # table; reads the rows, owns nothing.
  class WsTargets
    include Format

    DEFAULT_KEY = "up_default"
    REFERENCE_KEY = "iodine"
    # Minimum ratios of UP!'s figure to Iodine's.
    MINIMUM = { "ws_echo" => 1.5, "ws_broadcast" => 2.0 }.freeze
    # ws_idle: MB (of 1,024 KiB) of growth allowed for IDLE_CONNECTIONS connections.
    IDLE_MB = 10.0
    IDLE_CONNECTIONS = 10_000

    # connections: what the idle table held (the target scales with it).
    def initialize(app, rows, connections: IDLE_CONNECTIONS)
      @app = app
      @rows = rows
      @connections = connections
    end

    # A Markdown paragraph and list for under the table, or "" when it has no default row.
    def markdown
      default = @rows.find { |r| r.peer.key == DEFAULT_KEY }
      return "" unless default

      head = "UP! #{default.peer.mode(default.workers)} against the targets"
      return "\n#{head}: not measured (#{default.reason}).\n" unless default.ok?

      "\n#{head}:\n\n#{@app == "ws_idle" ? idle_line(default) : ratio_line(default)}\n"
    end

    private

    def ratio_line(default)
      minimum = MINIMUM.fetch(@app)
      goal = "target ≥ #{minimum}×"
      reference = @rows.find { |r| r.peer.key == REFERENCE_KEY && r.ok? }
      return "- Iodine: not in this table (#{goal}; run with --only up,iodine)" unless reference

      ratio = default.result.requests_per_sec.fdiv(reference.result.requests_per_sec)
      p99 = @app == "ws_broadcast" ? "; p99 from publish to receipt #{ms(default.result.p99)} " \
                                     "(Iodine's #{ms(reference.result.p99)})" : ""
      format("- %<ratio>.2f× %<name>s %<mode>s, %<unit>s: %<goal>s, %<verdict>s%<p99>s",
             ratio: ratio, name: reference.peer.name, mode: reference.peer.mode(reference.workers),
             unit: default.result.unit, goal: goal, verdict: ratio >= minimum ? "met" : "**missed**", p99: p99)
    end

    def idle_line(default)
      limit = IDLE_MB * @connections / IDLE_CONNECTIONS
      growth = default.rss_growth_kb
      scaled = @connections == IDLE_CONNECTIONS ? "" : format(" (%.2f MB for %s)", limit, thousands(@connections))
      goal = "target ≤ #{IDLE_MB.round} MB for #{thousands(IDLE_CONNECTIONS)}#{scaled}"
      return "- RSS growth: not read (#{goal})" unless growth

      format("- %<growth>+.1f MB of RSS for %<count>s idle connections: %<goal>s, %<verdict>s",
             growth: growth / 1024.0, count: thousands(@connections), goal: goal,
             verdict: growth / 1024.0 <= limit ? "met" : "**missed**")
    end
  end
end
