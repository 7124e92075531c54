# frozen_string_literal: true

require "json"
require "rack/utils"

module Up
  # The control endpoint's Rack app (--control-url): stats as JSON, and the signals a deploy
  # sends, for `upctl` (exe/upctl) and anything that speaks HTTP. Every request must carry the
  # token (?token=, or Authorization: Bearer). Created by Up::ControlServer with the runner
  # whose #stats it reports; the actions are signals to this very process, so they go through
  # the runner's signal handling like a `kill` would.
  class ControlApp
    ACTIONS = {
      "/restart" => "USR2",
      "/phased-restart" => "USR1",
      "/stop" => "TERM",
      "/halt" => "QUIT",
      "/reopen-logs" => "HUP",
      "/reload-certs" => "HUP"
    }.freeze

    def initialize(runner, token)
      @runner = runner
      @token = token
    end

    def call(env)
      return json(403, error: "wrong or missing token") unless authorized?(env)
      return json(405, error: "GET or POST") unless %w[GET POST].include?(env["REQUEST_METHOD"])

      path = env["PATH_INFO"]
      return json(200, @runner.stats) if path == "/stats"

      signal = ACTIONS[path]
      return json(404, error: "no such command; try /stats, #{ACTIONS.keys.join(", ")}") unless signal

      Process.kill(signal, Process.pid)
      json(200, ok: true, signal: signal)
    end

    private

    def authorized?(env)
      given = Rack::Utils.parse_query(env["QUERY_STRING"])["token"] ||
              env["HTTP_AUTHORIZATION"].to_s[/\ABearer (.+)\z/, 1]
      !given.nil? && Rack::Utils.secure_compare(given, @token)
    end

    def json(status, body)
      [status, { "content-type" => "application/json" }, ["#{JSON.generate(body)}\n"]]
    end
  end
end
