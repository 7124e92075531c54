# frozen_string_literal: true

# test/rackup/ws_echo.ru for Falcon, with async-websocket (bench/Gemfile), which has its own API
# rather than the upgrade API: every message goes back to its sender as it came, on the
# connection's own fiber. Measured by bench/run's ws_echo and ws_idle tables.
require "async/websocket/adapters/rack"

run lambda { |env|
  Async::WebSocket::Adapters::Rack.open(env) do |connection|
    while (message = connection.read)
      connection.write(message)
      connection.flush
    end
  end or [426, { "content-type" => "text/plain" }, ["WebSocket only\n"]]
}
