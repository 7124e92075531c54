# frozen_string_literal: true

# permessage-deflate (RFC 7692) with --ws-deflate, against the npm ws client (which offers it):
# negotiated in the 101, messages echoed compressed both ways and read back whole by ws, a
# broadcast compressed once and read by every subscriber; without the option the offer is
# declined and messages go plain.
require "json"
require "open3"
require_relative "helper"

class TestWebSocketDeflate < Minitest::Test
  include UpTestHelpers

  CLIENT = File.expand_path("support/ws_node_client.js", __dir__)

  class Echo
    def on_message(client, data)
      client.write(data)
    end
  end

  class Room
    def on_open(client)
      client.subscribe("room")
    end

    def on_message(client, data)
      client.publish("room", data)
    end
  end

  def app(handler)
    lambda do |env|
      env["rack.upgrade"] = handler
      [101, {}, []]
    end
  end

  def node(*messages)
    out, status = Open3.capture2("node", CLIENT, "ws://127.0.0.1:#{@port}/", *messages)
    assert status.success?, out
    out.lines.map { |l| JSON.parse(l) }
  end

  def test_messages_go_compressed_both_ways_and_arrive_whole
    start_server(app(Echo.new), ws_deflate: true)
    long = "compress me " * 500
    lines = node(long, "short", "close me")
    assert_match(/\Apermessage-deflate/, lines[0]["extensions"])
    assert_equal [long, "short", "close me"], lines.filter_map { |l| l["message"] }
    assert_equal 1000, lines.last["close"]
  end

  def test_without_the_option_the_offer_is_declined
    start_server(app(Echo.new))
    lines = node("plain", "close me")
    assert_nil lines[0]["extensions"]
    assert_equal ["plain", "close me"], lines.filter_map { |l| l["message"] }
  end

  # One subscriber that only listens, one that publishes (subscribed too): both read the
  # broadcast, compressed once for both.
  def test_a_broadcast_reaches_compressing_subscribers_whole
    server = start_server(app(Room.new), ws_deflate: true, threads: 2)
    long = "news for everyone " * 300
    listener = Thread.new { node }
    Timeout.timeout(10) { Thread.pass until server.server.pubsub_stats[:subscriptions] == 1 }
    lines = node(long, "close me")
    assert_equal [long, "close me"], lines.filter_map { |l| l["message"] }
    assert_equal [long, "close me"], listener.value.filter_map { |l| l["message"] }
  end
end
