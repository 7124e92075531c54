# frozen_string_literal: true

# A WebSocket that echoes every message as it came, for test_websocket_protocol.rb's wire
# cases (the frames and close codes of RFC 6455, which are the server's to get right, not the
# app's). An app that echoes is what those cases assume (test/support/ws_wire_case.rb).
class Echo
  def on_message(client, data)
    client.write(data)
  end
end

echo = Echo.new
run lambda { |env|
  next [426, {}, ["WebSocket only\n"]] unless env["rack.upgrade?"] == :websocket

  env["rack.upgrade"] = echo
  [101, {}, []]
}
