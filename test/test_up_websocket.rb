# frozen_string_literal: true

# WebSockets and pub/sub on `up` where its way of handing the engine's events to JavaScript
# shows (ext/up/node/event_queue.h): the conformance suite checks the API on every runtime; these
# check what only `up` could get wrong. A block subscription's message is handed over after
# the engine's fan-out, not inside it, so its block may subscribe, publish and unsubscribe
# (inside the fan-out, which holds the registry's lock, that would deadlock). Messages of
# 32 KiB and more go by reference (copied out of V8 once), text with multibyte characters and
# binary alike, and still arrive whole and in order.
require_relative "helper"
require_relative "support/up_process"
require_relative "support/ws_client"
require "tmpdir"

class TestUpWebSocket < Minitest::Test
  include UpTestHelpers
  include UpProcess

  APP = <<~RUBY
    # frozen_string_literal: true

    # /chain: the first message on "one" subscribes to "two", publishes there and leaves "one".
    class Chain
      def on_open(client)
        client.subscribe("one") do |_channel, message|
          client.subscribe("two") { |_channel, second| client.write("two: \#{second}") }
          client.publish("two", "\#{message}!")
          client.unsubscribe("one")
        end
        client.write("ready")
      end
    end

    # /echo: every message back as it came.
    class Echo
      def on_message(client, data)
        client.write(data)
      end
    end

    HANDLERS = { "/chain" => Chain.new, "/echo" => Echo.new }.freeze

    run lambda { |env|
      if env["PATH_INFO"] == "/publish"
        Up.publish(env["QUERY_STRING"], "hello")
        next [200, {}, ["published\\n"]]
      end
      env["rack.upgrade"] = HANDLERS.fetch(env["PATH_INFO"])
      [101, {}, []]
    }
  RUBY

  def setup
    super
    @dir = Dir.mktmpdir("up-websocket")
    File.write(File.join(@dir, "config.ru"), APP)
    start_up(File.join(@dir, "config.ru"))
  end

  def teardown
    @clients&.each(&:close_socket)
    super
    FileUtils.rm_rf(@dir)
  end

  def open_ws(path)
    (@clients ||= []) << WSClient.open(@port, path: path)
    @clients.last
  end

  def test_a_block_may_subscribe_publish_and_unsubscribe_while_its_message_is_delivered
    ws = open_ws("/chain")
    assert_equal "ready", ws.read_message.payload
    assert_equal "published\n", get("/publish?one").body
    assert_equal "two: hello!", ws.read_message.payload
    get("/publish?one")
    assert_equal "published\n", get("/publish?two").body
    assert_equal "two: hello", ws.read_message.payload, "no longer on one: only two's message came"
  end

  def test_large_text_and_binary_messages_arrive_whole_and_in_order
    ws = open_ws("/echo")
    text = "é☃x" * 20_000 # 120,000 bytes of UTF-8
    binary = Random.new(7).bytes(70_000)
    ws.text(text)
    ws.binary(binary)
    ws.text("small")
    first, second, third = Array.new(3) { ws.read_message }
    assert_equal [1, text.b], [first.opcode, first.payload.b]
    assert_equal [2, binary.b], [second.opcode, second.payload.b]
    assert_equal "small", third.payload
  end
end
