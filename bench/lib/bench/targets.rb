# frozen_string_literal: true

require_relative "options"
require_relative "peers"

module Bench
  # The throughput targets for UP! with default settings, checked against one table
  # of bench/run: the default row's req/s as a ratio of a reference row in the same table (the
  # fastest other UP! mode, UP! at the --baseline commit, nginx, a peer or the best of
  # several), each with its minimum where one is set for that app, worker count and
  # load shape. Created by Bench::Report for each table;
  # reads the rows, owns nothing.
  class Targets
    DEFAULT_KEY = "up_default"
    # UP! at another commit (bench/run --baseline): not one of this commit's modes.
    BASELINE_KEY = "up_baseline"

    # label: what the ratio is against. applies: (app, workers, shape) -> whether a target
    # has a minimum there; shape is the run's load, "t1c32" or "t2c64" (Options#load_shape).
    # pick: finds the reference row among the table's measured rows other
    # than the default. hint: how to get the reference into the table when it is missing.
    # slack: why the minimum sits below the goal ("no lower" measured with noise).
    Target = Struct.new(:label, :applies, :minimum, :pick, :hint, :slack, keyword_init: true)

    # The Rack peers the cluster and JSON targets compare against, the same set as "the best
    # Rack peer"; nginx and H2O are limits, unicorn does not keep connections alive.
    NAMED_PEERS = %w[puma puma_thread iodine agoo falcon itsi].freeze
    NAMED_LABEL = "the best of Puma, Iodine, Agoo, Falcon and Itsi"

    # The targets hold under wrk -t1 -c32 but for the heavier hello.ru ones with 2 workers, which
    # are for -t2 -c64 (bench/run --load t2c64). Under another shape than a target's, its ratio
    # is printed for information only.
    DEFAULT_SHAPE = "t#{Options::DEFAULT_WRK_THREADS}c#{Options::DEFAULT_CONNECTIONS}"
    HEAVY_SHAPE = "t2c64"

    def self.best(rows, keys)
      rows.select { |r| keys.include?(r.peer.key) }.max_by { |r| rps(r) }
    end

    def self.row(rows, key)
      rows.find { |r| r.peer.key == key }
    end

    # json_const is held against nginx answering the same document, not against H2O: a multiple
    # of H2O could be above what nginx itself reaches on two cores.
    LIST = [
      Target.new(label: "the fastest other UP! mode", minimum: 0.95,
                 applies: ->(_app, _w, shape) { shape == DEFAULT_SHAPE },
                 pick: lambda { |rows|
                   rows.select { |r| r.peer.group == "up" && r.peer.key != BASELINE_KEY }.max_by { |r| rps(r) }
                 }),
      Target.new(label: "UP! at the --baseline commit", minimum: 0.95,
                 slack: "no lower than before, 5% allowed for noise", hint: "run with --baseline REV",
                 applies: lambda { |app, _w, shape|
                   %w[hello env_to_s rails].include?(app) && shape == DEFAULT_SHAPE
                 },
                 pick: ->(rows) { row(rows, BASELINE_KEY) }),
      Target.new(label: "nginx", minimum: 0.95,
                 applies: ->(app, w, shape) { app == "hello" && w == 1 && shape == DEFAULT_SHAPE },
                 pick: ->(rows) { row(rows, "nginx") }),
      Target.new(label: "nginx", minimum: 0.9,
                 applies: ->(app, w, shape) { app == "hello" && w > 1 && shape == DEFAULT_SHAPE },
                 pick: ->(rows) { row(rows, "nginx") }),
      Target.new(label: "nginx", minimum: 0.9,
                 applies: ->(app, w, shape) { app == "hello" && w > 1 && shape == HEAVY_SHAPE },
                 pick: ->(rows) { row(rows, "nginx") }),
      Target.new(label: "nginx", minimum: 0.9,
                 applies: ->(app, w, shape) { app == "json_const" && w == 1 && shape == DEFAULT_SHAPE },
                 pick: ->(rows) { row(rows, "nginx") }),
      Target.new(label: "iodine", minimum: 1.3,
                 applies: ->(app, w, shape) { app == "hello" && w == 1 && shape == DEFAULT_SHAPE },
                 pick: ->(rows) { row(rows, "iodine") }),
      Target.new(label: "the best peer", minimum: 1.3,
                 applies: ->(app, w, shape) { app == "env_to_s" && w == 1 && shape == DEFAULT_SHAPE },
                 pick: lambda { |rows|
                   rows.reject { |r| r.peer.runtime == :up || r.peer.runtime == :native }.max_by { |r| rps(r) }
                 }),
      Target.new(label: NAMED_LABEL, minimum: 1.3,
                 applies: lambda { |app, w, shape|
                   %w[hello env_to_s json_api].include?(app) && w > 1 && shape == DEFAULT_SHAPE
                 },
                 pick: ->(rows) { best(rows, NAMED_PEERS) }),
      Target.new(label: NAMED_LABEL, minimum: 1.3,
                 applies: ->(app, w, shape) { app == "json_api" && w == 1 && shape == DEFAULT_SHAPE },
                 pick: ->(rows) { best(rows, NAMED_PEERS) }),
      Target.new(label: NAMED_LABEL, minimum: 1.3,
                 applies: ->(app, w, shape) { app == "hello" && w > 1 && shape == HEAVY_SHAPE },
                 pick: ->(rows) { best(rows, NAMED_PEERS) }),
      # The file targets are on a 1 KB and a 1 MB file (static_100k: ratios only).
      Target.new(label: "nginx serving the files", minimum: 0.9,
                 applies: ->(app, _w, shape) { %w[static_1k static_1m].include?(app) && shape == DEFAULT_SHAPE },
                 pick: ->(rows) { row(rows, "nginx_static") }),
      Target.new(label: "the best of Agoo, Iodine and Itsi serving the files", minimum: 1.5,
                 applies: ->(app, _w, shape) { %w[static_1k static_1m].include?(app) && shape == DEFAULT_SHAPE },
                 pick: ->(rows) { best(rows, %w[agoo iodine itsi]) }),
      # A Rails page's stylesheet and script against what Rails serves through
      # ActionDispatch::Static under Puma. The same label as the rails table's, so that each table
      # prints the one that applies to it.
      Target.new(label: "Puma", minimum: 10,
                 applies: ->(app, _w, shape) { %w[rails_css rails_js].include?(app) && shape == DEFAULT_SHAPE },
                 pick: ->(rows) { best(rows, %w[puma puma_thread]) }),
      Target.new(label: "Puma", minimum: 1.3,
                 applies: ->(app, _w, shape) { app == "rails" && shape == DEFAULT_SHAPE },
                 pick: ->(rows) { best(rows, %w[puma puma_thread]) })
    ].freeze

    # Successful responses a second in the row's median run: wrk counts a 503 as a request,
    # and a server that turns requests away is no faster for it.
    def self.rps(row)
      r = row.result
      return r.requests_per_sec.to_f if r.requests.zero?

      r.requests_per_sec.to_f * (r.requests - r.non_2xx_3xx) / r.requests
    end

    # shape: the run's load shape (Options#load_shape).
    def initialize(app, workers, rows, shape: DEFAULT_SHAPE)
      @app = app
      @workers = workers
      @rows = rows
      @shape = shape
    end

    # A Markdown paragraph and list for under the table, or "" when the table has no default row.
    def markdown
      default = @rows.find { |r| r.peer.key == DEFAULT_KEY }
      return "" unless default

      head = "UP! #{default.peer.mode(default.workers)} against the targets"
      return "\n#{head}: not measured (#{default.reason}).\n" unless default.ok?

      others = @rows.select { |r| r.ok? && !r.equal?(default) }
      lines = LIST.filter_map { |target| line(target, default, target.pick.call(others)) }.uniq
      "\n#{head}:\n\n#{lines.join("\n")}\n"
    end

    private

    # nil when there is nothing to say: no reference row, and no target for this app either.
    def line(target, default, reference)
      applies = applies?(target)
      return nil unless applies || reference
      return "- #{target.label}: not in this table (#{goal(target)}#{"; #{target.hint}" if target.hint})" unless reference

      ratio = self.class.rps(default) / self.class.rps(reference)
      return nil unless applies || LIST.none? { |t| t.label == target.label && applies?(t) }

      verdict = if applies
                  "#{goal(target)}, #{ratio >= target.minimum ? "met" : "**missed**"}"
                else
                  "no target for #{@app}.ru with #{Peers.workers(@workers)}#{shape_text}"
                end
      only_good = reference.result.non_2xx_3xx.positive? ? " (its 2xx/3xx responses only)" : ""
      format("- %<ratio>.2f× %<label>s — %<name>s %<mode>s%<only_good>s: %<verdict>s%<cpu>s",
             ratio: ratio, label: target.label, name: reference.peer.name,
             mode: reference.peer.mode(reference.workers), only_good: only_good, verdict: verdict,
             cpu: cpu_text(default, reference))
    end

    # UP!'s CPU per request against the reference's, when both were read: on cores shared with
    # the load generator, what req/s follows.
    def cpu_text(default, reference)
      ours = default.cpu_us_per_request
      theirs = reference.cpu_us_per_request
      return "" unless ours && theirs&.positive?

      format("; CPU/req %<ratio>.2f× its (%<ours>.1f against %<theirs>.1f µs)",
             ratio: ours / theirs, ours: ours, theirs: theirs)
    end

    def applies?(target)
      target.applies.call(@app, @workers, @shape)
    end

    def goal(target)
      "target ≥ #{target.minimum}×#{" (#{target.slack})" if target.slack}"
    end

    # Says under which load a ratio has no target, when that is not the default one.
    def shape_text
      @shape == DEFAULT_SHAPE ? "" : " under `--load #{@shape}`"
    end
  end
end
