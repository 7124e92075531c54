# frozen_string_literal: true

# Pub/sub across a cluster's workers, for test/test_pubsub_cluster.rb and
# test/test_pubsub_redis_servers.rb. A WebSocket to /sub?c=CHANNEL subscribes to the channel,
# to /sub?p=PATTERN to the glob pattern, to /sub?c=C&p=P to both (its first message says which
# worker took it: "pid PID"); a message "channel:text" publishes text to channel; "burst
# CHANNEL N SIZE" publishes N messages of SIZE bytes ("m0 xxx...", "m1 xxx...") and answers
# "sent". An engine given by UP_TEST_ENGINE_LOG is attached and writes each
# subscribe/unsubscribe it hears of to that file, one line each.
require "uri"

# Records what an attached engine is told, in the master (workers fork with it attached).
class FileEngine
  def initialize(path)
    @path = path
  end

  def subscribe(channel, match)
    File.write(@path, "subscribe #{channel} #{match.inspect} #{Process.pid}\n", mode: "a")
  end

  def unsubscribe(channel, match)
    File.write(@path, "unsubscribe #{channel} #{match.inspect} #{Process.pid}\n", mode: "a")
  end

  def publish(channel, message)
    Up.publish(channel, message, false)
  end
end

Up::PubSub.attach(FileEngine.new(ENV["UP_TEST_ENGINE_LOG"])) if ENV["UP_TEST_ENGINE_LOG"]

# Subscribes on open; publishes what it is sent.
class ClusterHandler
  def on_open(client)
    client.write("pid #{Process.pid}")
    query = URI.decode_www_form(client.env["QUERY_STRING"]).to_h
    client.subscribe(query["c"]) if query["c"]
    client.subscribe(query["p"], match: :glob) if query["p"]
  end

  def on_message(client, data)
    if (burst = data.match(/\Aburst (\S+) (\d+) (\d+)\z/))
      channel, count, size = burst.captures
      Integer(count).times { |i| client.publish(channel, "m#{i} ".ljust(Integer(size), "x")) }
      return client.write("sent")
    end
    channel, text = data.split(":", 2)
    client.publish(channel, text)
  end
end

handler = ClusterHandler.new
run lambda { |env|
  next [200, {}, [Process.pid.to_s]] unless env["rack.upgrade?"] == :websocket

  env["rack.upgrade"] = handler
  [101, {}, []]
}
