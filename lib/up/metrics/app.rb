# frozen_string_literal: true

require_relative "exposition"

module Up
  module Metrics
    # The Rack app of the metrics endpoint (--metrics-url): read-only, no token, for
    # Prometheus, load balancers and Kubernetes probes. Created by Up::Metrics::Server with the
    # runner whose stats and lifecycle it reports:
    #
    #   GET /metrics  every worker's counters in the Prometheus text format
    #   GET /live     200 while the process runs (a liveness probe)
    #   GET /ready    200 while it takes requests; 503 from the moment a stop begins, through
    #                 --stop-delay (a readiness probe, a load balancer's health check)
    class App
      TEXT = { "content-type" => "text/plain" }.freeze

      def initialize(runner, lifecycle)
        @runner = runner
        @lifecycle = lifecycle
      end

      def call(env)
        return [405, TEXT.merge("allow" => "GET, HEAD"), ["GET or HEAD\n"]] unless %w[GET HEAD].include?(env["REQUEST_METHOD"])

        case env["PATH_INFO"]
        when "/metrics"
          body = Exposition.new(@runner.stats, ready: @lifecycle.ready?).to_s
          [200, { "content-type" => Exposition::CONTENT_TYPE }, [body]]
        when "/live" then [200, TEXT, ["live\n"]]
        when "/ready" then @lifecycle.ready? ? [200, TEXT, ["ready\n"]] : [503, TEXT, ["not ready\n"]]
        else [404, TEXT, ["try /metrics, /live or /ready\n"]]
        end
      end
    end
  end
end
