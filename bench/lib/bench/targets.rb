# frozen_string_literal: true

module Bench
  # Issue 12's throughput targets for UP! with default settings, checked against one table of
  # bench/run: the default row's req/s as a ratio of the fastest other UP! mode, of nginx, of
  # iodine and of the best peer in the same table, each with its target when the issue sets
  # one for that app. Created by Bench::Report for each table; reads the rows, owns nothing.
  class Targets
    DEFAULT_KEY = "up_default"

    # label: what the ratio is against. apps: where the issue sets minimum (nil: every app).
    # pick: finds the reference row among the table's measured rows other than the default.
    Target = Struct.new(:label, :apps, :minimum, :pick, keyword_init: true)

    LIST = [
      Target.new(label: "the fastest other UP! mode", apps: nil, minimum: 0.95,
                 pick: ->(rows) { rows.select { |r| r.peer.runtime == :up }.max_by { |r| rps(r) } }),
      Target.new(label: "nginx", apps: %w[hello], minimum: 0.85,
                 pick: ->(rows) { rows.find { |r| r.peer.key == "nginx" } }),
      Target.new(label: "iodine", apps: %w[hello], minimum: 1.3,
                 pick: ->(rows) { rows.find { |r| r.peer.key == "iodine" } }),
      # nginx is the limit, not a peer: it runs no app.
      Target.new(label: "the best peer", apps: %w[env_to_s], minimum: 1.3,
                 pick: lambda { |rows|
                   rows.reject { |r| r.peer.runtime == :up || r.peer.key == "nginx" }.max_by { |r| rps(r) }
                 })
    ].freeze

    def self.rps(row)
      row.result.requests_per_sec.to_f
    end

    def initialize(app, rows)
      @app = app
      @rows = rows
    end

    # A Markdown paragraph and list for under the table, or "" when the table has no default row.
    def markdown
      default = @rows.find { |r| r.peer.key == DEFAULT_KEY }
      return "" unless default

      head = "UP! #{default.peer.mode(default.workers)} against issue 12's targets"
      return "\n#{head}: not measured (#{default.reason}).\n" unless default.ok?

      others = @rows.select { |r| r.ok? && !r.equal?(default) }
      lines = LIST.filter_map { |target| line(target, default, target.pick.call(others)) }
      "\n#{head}:\n\n#{lines.join("\n")}\n"
    end

    private

    # nil when there is nothing to say: no reference row, and no target for this app either.
    def line(target, default, reference)
      applies = target.apps.nil? || target.apps.include?(@app)
      unless reference
        return applies ? "- #{target.label}: not in this table (target ≥ #{target.minimum}×)" : nil
      end

      ratio = self.class.rps(default) / self.class.rps(reference)
      verdict = if applies
                  "target ≥ #{target.minimum}×, #{ratio >= target.minimum ? "met" : "**missed**"}"
                else
                  "no target for #{@app}.ru"
                end
      format("- %<ratio>.2f× %<label>s — %<name>s %<mode>s: %<verdict>s",
             ratio: ratio, label: target.label, name: reference.peer.name,
             mode: reference.peer.mode(reference.workers), verdict: verdict)
    end
  end
end
