# frozen_string_literal: true

# WebSocket echo through the upgrade API (docs/websockets.md): every
# message goes back to its sender as it came. The same file runs on UP! and on Iodine, which
# implements the same API; bench/config/falcon_ws_echo.ru and bench/config/ws_node.js do the
# same on Falcon and on Node's ws. Measured by bench/run's ws_echo and ws_idle tables.

# The connection's handler: stateless, so one serves every connection.
class EchoHandler
  def on_message(client, data)
    client.write(data)
  end
end

handler = EchoHandler.new

run lambda { |env|
  next [426, { "content-type" => "text/plain" }, ["WebSocket only\n"]] unless env["rack.upgrade?"] == :websocket

  env["rack.upgrade"] = handler
  [101, {}, []]
}
