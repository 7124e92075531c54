# frozen_string_literal: true

require_relative "format"
require_relative "ws_load"
require_relative "ws_targets"

module Bench
  # One WebSocket table of bench/run in Markdown: ws_echo, ws_broadcast or ws_idle,
  # each server's median run with the server's CPU per operation and the load client's beside
  # it, so a reader sees whether the client could have been the bottleneck; the targets
  # under it (Bench::WsTargets). Created by Bench::Report for each such table; reads the rows.
  class WsTable
    include Format

    COLUMNS = {
      "echo" => ["round trips/s", "server CPU/rt", "client CPU/rt", "p50", "p99", "errors", "vs UP!"],
      "broadcast" => ["deliveries/s", "server CPU/delivery", "client CPU/delivery", "p50", "p99",
                      "lost / dup / out of order", "errors", "vs UP!"],
      "idle" => ["RSS idle", "RSS held", "growth", "per connection", "still open", "sample echoed",
                 "handshakes/s", "server CPU/handshake", "client CPU/handshake", "errors"]
    }.freeze
    # The broadcast's own error kinds (WsLoad::Result#errors), which get a column of their own.
    BROADCAST_ERRORS = %w[lost duplicates out\ of\ order].freeze

    def initialize(app, rows, ws_load)
      @app = app
      @mode = Apps.fetch(app).ws
      @rows = rows
      @ws_load = ws_load
      @shape = WsLoad::SHAPES.fetch(@mode)
    end

    def markdown
      columns = COLUMNS.fetch(@mode)
      out = +"### #{title}\n\n"
      out << "| server | mode | #{columns.join(" | ")} | notes |\n"
      out << "|---|---|#{"--:|" * columns.size}---|\n"
      baseline = @rows.find { |r| r.peer.key == WsTargets::DEFAULT_KEY && r.ok? }
      @rows.each { |row| out << "| #{cells(row, baseline, columns.size).join(" | ")} |\n" }
      out << client_share
      out << WsTargets.new(@app, @rows, connections: @shape[:connections]).markdown
    end

    private

    def title
      case @mode
      when "echo"
        "#{@app}.ru: echo, #{@shape[:connections]} connections, #{@shape[:size]}-byte messages, #{workers}"
      when "broadcast"
        "#{@app}.ru: #{thousands(@shape[:connections])} subscribers of one channel, #{@shape[:size]}-byte " \
          "messages, window #{@ws_load.window}, #{workers}"
      else
        "#{@app}: #{thousands(@shape[:connections])} idle WebSocket connections to ws_echo.ru, #{workers}"
      end
    end

    # The table's worker count (ws_broadcast runs on one and on all cores).
    def workers
      count = @rows.first&.workers || 1
      count == 1 ? "1 worker" : "#{count} workers"
    end

    def cells(row, baseline, width)
      head = [row.peer.name, row.peer.mode(row.workers)]
      unless row.ok?
        status, detail = row.reason.split(": ", 2)
        return head + [status] + [""] * (width - 1) + [cell([detail, *row.notes].compact.join("; "))]
      end

      head + send("#{@mode}_cells", row, baseline) + [cell(row.notes.join("; "))]
    end

    def echo_cells(row, baseline)
      r = row.result
      [thousands(r.requests_per_sec.round), us(row.cpu_us_per_request), us(row.client_cpu_us_per_request),
       ms(r.p50), ms(r.p99), errors(row.errors), ratio(row, baseline)]
    end

    def broadcast_cells(row, baseline)
      r = row.result
      counts = BROADCAST_ERRORS.map { |kind| row.errors.fetch(kind, 0) }
      lost = counts.join(" / ")
      [thousands(r.requests_per_sec.round), us(row.cpu_us_per_request), us(row.client_cpu_us_per_request),
       ms(r.p50), ms(r.p99), counts.any?(&:positive?) ? "**#{lost}**" : lost,
       errors(row.errors.except(*BROADCAST_ERRORS)), ratio(row, baseline)]
    end

    def idle_cells(row, _baseline)
      r = row.result
      growth = row.rss_growth_kb
      per = growth && r.opened.to_i.positive? ? format("%.2f KiB", growth.fdiv(r.opened)) : "?"
      [mb(row.rss_idle), mb(row.rss_held.max), growth ? format("%+.1f MB", growth / 1024.0) : "?", per,
       "#{thousands(r.still_open.to_i)} of #{thousands(r.opened.to_i)}", "#{r.sample_echoed} of #{r.sample}",
       thousands(r.requests_per_sec.round), us(row.cpu_us_per_request), us(row.client_cpu_us_per_request),
       errors(row.errors)]
    end

    def ratio(row, baseline)
      baseline ? format("%.2f×", row.result.requests_per_sec.fdiv(baseline.result.requests_per_sec)) : "—"
    end

    # The client's CPU per operation as a share of each server's, and how busy the client
    # was: near 100% of a core, the client may have been what limited a row.
    def client_share
      shares = @rows.select(&:ok?).filter_map do |row|
        server = row.cpu_us_per_request
        client = row.client_cpu_us_per_request
        [row, client / server, row.client_busy.per] if server&.positive? && client
      end
      return "" if shares.empty?

      list = shares.map do |row, share, busy|
        "#{row.peer.name} #{format("%.0f%%", share * 100)}#{format(" (ws_load busy %.0f%% of a core)", busy * 100) if busy}"
      end
      "\nws_load's CPU per #{unit_name} as a share of the server's: #{list.join(", ")}.\n"
    end

    def unit_name
      { "echo" => "round trip", "broadcast" => "delivery", "idle" => "handshake" }.fetch(@mode)
    end
  end
end
