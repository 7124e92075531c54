# frozen_string_literal: true
# backtick_javascript: true

require "up/node/responder"

module Up
  module Node
    # Serves one request at a time for one process: builds the env (node/up_node/env.js),
    # calls the app and sends what it returns (Up::Node::Responder). node/up_node/worker.js
    # creates one with the app; node/up_node/server.js calls #serve with an Exchange
    # (exchange.js) once a request's body has arrived. Whatever the app or its body raises
    # becomes a 500 and a log entry with the backtrace; nothing is raised into Node.
    class Handler
      # env: the JS EnvBuilder (node/up_node/env.js). log: the JS Log (node/up_node/log.js).
      def initialize(app, env, log)
        @app = app
        @env = env
        @log = log
      end

      def serve(exchange)
        env = `#{@env}.build(#{exchange})`
        status, headers, body = @app.call(env)
        # Most responses: [Integer, Hash, Array of Strings], checked and sent by JS at once.
        return if `#{exchange}.sendCommon(#{status}, #{headers}, #{body}, #{env})`

        Responder.new(exchange, env).respond(status, headers, body)
      rescue ::Exception => e # JS errors too: Opal rescues them as Exception
        report(e, env)
        `#{exchange}.fail()`
      end

      private

      def report(error, env)
        where = env ? "#{env["REQUEST_METHOD"]} #{env["REQUEST_URI"]}" : "building the env"
        message = if error.is_a?(Responder::InvalidResponse)
                    "invalid response from the app to #{where}: #{error.message}"
                  else
                    "error in #{where}: #{Node.describe(error)}"
                  end
        `#{@log}.line(#{message})`
      end
    end
  end
end
