# frozen_string_literal: true

# WebSocket broadcast through the upgrade API's pub/sub
# (docs/websockets.md): a connection to /publish publishes each
# message it sends to one channel; a connection to any other path subscribes to that channel
# without a block, so the server writes each message straight to it. The same file runs on UP!
# and on Iodine; bench/config/falcon_ws_broadcast.ru and bench/config/ws_node.js do the same
# on Falcon and on Node's ws. Measured by bench/run's ws_broadcast table.

CHANNEL = "bench"

# A subscriber: subscribed when it opens, and its messages are ignored.
class Subscriber
  def on_open(client)
    client.subscribe(CHANNEL)
  end
end

# The publisher: each message goes to the channel.
class Publisher
  def on_message(client, data)
    client.publish(CHANNEL, data)
  end
end

subscriber = Subscriber.new
publisher = Publisher.new

run lambda { |env|
  next [426, { "content-type" => "text/plain" }, ["WebSocket only\n"]] unless env["rack.upgrade?"] == :websocket

  env["rack.upgrade"] = env["PATH_INFO"] == "/publish" ? publisher : subscriber
  [101, {}, []]
}
