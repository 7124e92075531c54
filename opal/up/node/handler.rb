# frozen_string_literal: true
# backtick_javascript: true

require "up/node/responder"
require "up/node/upgrader"

module Up
  module Node
    # Serves one request at a time for one process: builds the env (node/up_node/env.js),
    # calls the app and sends what it returns (Up::Node::Responder), or takes the upgrade it
    # accepted (Up::Node::Upgrader). node/up_node/worker.js
    # creates one with the app; node/up_node/server.js calls #serve with an Exchange
    # (exchange.js) once a request's body has arrived. Whatever the app or its body raises
    # becomes a 500 and a log entry with the backtrace; nothing is raised into Node.
    class Handler
      # env: the JS EnvBuilder (node/up_node/env.js). log: the JS Log (node/up_node/log.js).
      def initialize(app, env, log)
        @app = app
        @env = env
        @log = log
        @proc_call = `Opal.Proc.$$prototype.$call`
      end

      def serve(exchange)
        env = `#{@env}.build(#{exchange})`
        status, headers, body = direct_lambda? ? `#{@app}(#{env})` : @app.call(env)
        # A full hijack (rack.hijack on `up`): the socket is the app's, its response ignored.
        return close_ignored(body) if `#{exchange}.hijacked === true`
        # Most responses: [Integer, Hash, Array of Strings], checked and sent by JS at once.
        return if `#{exchange}.sendCommon(#{status}, #{headers}, #{body}, #{env})`
        # A request that may become a WebSocket or an event stream, and an app that took it.
        return if `#{exchange}.upgrade !== null` && Upgrader.new(exchange, env, @log).accept(status, headers, body)

        Responder.new(exchange, env, ->(error) { report(error, env) }).respond(status, headers, body)
      rescue ::Exception => e # JS errors too: Opal rescues them as Exception
        report(e, env)
        `#{exchange}.fail()`
      end

      private

      # A lambda app (`run ->(env) { ... }`) is a JS function that Proc#call calls with the
      # same argument, after copying its arguments into an Array and applying them (Array
      # work that Opal's bridged Array makes slow in V8). It is called directly while
      # Proc#call is the bundle's and the lambda has no call of its own; one marked $$ret
      # needs Proc#call to catch its `return`.
      def direct_lambda?
        `#{@app}.$$is_lambda === true && #{@app}.$$ret == null && #{@app}.$call === #{@proc_call}`
      end

      # SPEC, "Hijacking": the body of a response a full hijack made void is still closed.
      def close_ignored(body)
        body.close if body.respond_to?(:close)
      end

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
