# frozen_string_literal: true
# backtick_javascript: true

require "up/node/client"

module Up
  module Node
    # Takes an upgrade the app accepted (reference/websocket-pubsub.md, "Upgrade"), as up_ruby
    # does (up_rb_upgrade in ext/up/ruby/client.c): the app set env["rack.upgrade"] to a
    # handler and answered a status below 300 to a request that may become a WebSocket or an
    # event stream. The connection's JS side (node/up_node/upgrades.js) sends the 101 or the
    # stream's head with the app's fields; the body is never sent, only closed; then the
    # handler's on_open runs. Up::Node::Handler makes one for each such request.
    class Upgrader
      # exchange: the JS Exchange, whose `upgrade` says what the request may become.
      def initialize(exchange, env, log)
        @exchange = exchange
        @env = env
        @log = log
      end

      # False, having done nothing, when the app did not take the upgrade (its response goes
      # out as it is: a refusal such as 403).
      def accept(status, headers, body)
        handler = @env["rack.upgrade"]
        return false if handler.nil? || !status.is_a?(Integer) || status.negative? || status >= 300
        return false unless headers.is_a?(Hash)

        upgrades = `#{@exchange}.server.upgrades`
        client = Client.new(`#{@exchange}.upgrade`, @env, handler, `#{upgrades}.pubsub`, @log)
        conn = `#{upgrades}.accept(#{@exchange}, #{headers}, #{client})`
        close_body(body)
        client.open(conn)
        true
      end

      private

      # Every body is closed, as the SPEC wants; what its close raises is logged, and the
      # upgrade stands.
      def close_body(body)
        body.close if body.respond_to?(:close)
      rescue ::Exception => e # JS errors too
        `#{@log}.line(#{"error in #{@env["REQUEST_METHOD"]} #{@env["REQUEST_URI"]}: #{Node.describe(e)}"})`
      end
    end
  end
end
