# frozen_string_literal: true

require_relative "peers"

module Bench
  # The issues' throughput targets for UP! with default settings, checked against one table
  # of bench/run: the default row's req/s as a ratio of a reference row in the same table (the
  # fastest other UP! mode, nginx, a peer or the best of several), each with its minimum where
  # an issue sets one for that app and worker count. Created by Bench::Report for each table;
  # reads the rows, owns nothing.
  class Targets
    DEFAULT_KEY = "up_default"
    # UP! at another commit (bench/run --baseline): not one of this commit's modes.
    BASELINE_KEY = "up_baseline"

    # label: what the ratio is against. applies: (app, workers) -> whether the issue sets
    # minimum there. issue: which one. pick: finds the reference row among the table's
    # measured rows other than the default.
    Target = Struct.new(:label, :applies, :minimum, :issue, :pick, keyword_init: true)

    # Issue 13 names the peers its cluster and JSON targets compare against; nginx and H2O
    # are limits, unicorn does not keep connections alive.
    NAMED_PEERS = %w[puma puma_thread iodine agoo falcon itsi].freeze

    def self.best(rows, keys)
      rows.select { |r| keys.include?(r.peer.key) }.max_by { |r| rps(r) }
    end

    LIST = [
      Target.new(label: "the fastest other UP! mode", issue: 12, minimum: 0.95, applies: ->(_app, _w) { true },
                 pick: lambda { |rows|
                   rows.select { |r| r.peer.group == "up" && r.peer.key != BASELINE_KEY }.max_by { |r| rps(r) }
                 }),
      Target.new(label: "nginx", issue: 12, minimum: 0.85, applies: ->(app, w) { app == "hello" && w == 1 },
                 pick: ->(rows) { rows.find { |r| r.peer.key == "nginx" } }),
      Target.new(label: "nginx", issue: 13, minimum: 0.9, applies: ->(app, w) { app == "hello" && w > 1 },
                 pick: ->(rows) { rows.find { |r| r.peer.key == "nginx" } }),
      Target.new(label: "iodine", issue: 12, minimum: 1.3, applies: ->(app, w) { app == "hello" && w == 1 },
                 pick: ->(rows) { rows.find { |r| r.peer.key == "iodine" } }),
      Target.new(label: "the best peer", issue: 12, minimum: 1.3, applies: ->(app, w) { app == "env_to_s" && w == 1 },
                 pick: lambda { |rows|
                   rows.reject { |r| r.peer.runtime == :up || r.peer.runtime == :native }.max_by { |r| rps(r) }
                 }),
      Target.new(label: "the best of Puma, Iodine, Agoo, Falcon and Itsi", issue: 13, minimum: 1.3,
                 applies: ->(app, w) { (%w[hello env_to_s].include?(app) && w > 1) || app == "json_api" },
                 pick: ->(rows) { best(rows, NAMED_PEERS) }),
      Target.new(label: "H2O with the same handler in mruby", issue: 13, minimum: 4.0,
                 applies: ->(app, _w) { app == "json_const" },
                 pick: ->(rows) { rows.find { |r| r.peer.key == "h2o" } }),
      Target.new(label: "Puma", issue: 13, minimum: 1.3, applies: ->(app, _w) { app == "rails" },
                 pick: ->(rows) { best(rows, %w[puma puma_thread]) })
    ].freeze

    # Successful responses a second in the row's median run: wrk counts a 503 as a request,
    # and a server that turns requests away is no faster for it.
    def self.rps(row)
      r = row.result
      return r.requests_per_sec.to_f if r.requests.zero?

      r.requests_per_sec.to_f * (r.requests - r.non_2xx_3xx) / r.requests
    end

    def initialize(app, workers, rows)
      @app = app
      @workers = workers
      @rows = rows
    end

    # A Markdown paragraph and list for under the table, or "" when the table has no default row.
    def markdown
      default = @rows.find { |r| r.peer.key == DEFAULT_KEY }
      return "" unless default

      head = "UP! #{default.peer.mode(default.workers)} against the issues' targets"
      return "\n#{head}: not measured (#{default.reason}).\n" unless default.ok?

      others = @rows.select { |r| r.ok? && !r.equal?(default) }
      lines = LIST.filter_map { |target| line(target, default, target.pick.call(others)) }.uniq
      "\n#{head}:\n\n#{lines.join("\n")}\n"
    end

    private

    # nil when there is nothing to say: no reference row, and no target for this app either.
    def line(target, default, reference)
      applies = target.applies.call(@app, @workers)
      return nil unless applies || reference
      return "- #{target.label}: not in this table (issue #{target.issue}: ≥ #{target.minimum}×)" unless reference

      ratio = self.class.rps(default) / self.class.rps(reference)
      return nil unless applies || LIST.none? { |t| t.label == target.label && t.applies.call(@app, @workers) }

      verdict = if applies
                  "issue #{target.issue}: ≥ #{target.minimum}×, #{ratio >= target.minimum ? "met" : "**missed**"}"
                else
                  "no target for #{@app}.ru with #{Peers.workers(@workers)}"
                end
      only_good = reference.result.non_2xx_3xx.positive? ? " (its 2xx/3xx responses only)" : ""
      format("- %<ratio>.2f× %<label>s — %<name>s %<mode>s%<only_good>s: %<verdict>s",
             ratio: ratio, label: target.label, name: reference.peer.name,
             mode: reference.peer.mode(reference.workers), only_good: only_good, verdict: verdict)
    end
  end
end
