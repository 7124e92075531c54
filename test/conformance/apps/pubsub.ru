# frozen_string_literal: true

# Pub/sub through the upgrade API (docs/websockets.md, "PubSub" and "Engines"), for
# test_pubsub.rb and test_pubsub_cluster.rb. A WebSocket to
# /sub?c=CHANNEL[,CHANNEL][&glob=1][&as=binary][&block=1] subscribes on opening (straight to
# the client, or with a block that writes "block CHANNEL MESSAGE"), then says
# "subscribed PID". Its messages are commands:
#
#   CHANNEL:TEXT           client.publish (the default engine: every worker)
#   local CHANNEL:TEXT     Up.publish(..., false): this process only
#   bytes CHANNEL          Up.publish of the binary "\xff\x00" to CHANNEL, this process only
#   engine CHANNEL:TEXT    Up.publish through the attached engine
#   unsub CHANNEL          client.unsubscribe
#   serversub PATTERN      Up.subscribe(PATTERN, match: :glob), whose block writes
#                          "server CHANNEL HEX ENCODING" to this client; "serverend" cancels it
#                          and answers "active false"
#   ["sub", PATTERN] / ["pub", CHANNEL] (JSON)
#                          a glob subscription whose block writes ["got", PATTERN, CHANNEL],
#                          and an Up.publish to CHANNEL
#
# With UP_TEST_ENGINE_LOG set, an engine is attached that appends each subscribe and
# unsubscribe it hears of, with the pid of the process it runs in, to that file, and delivers
# what it is given back with Up.publish(..., false). Not under Rack::Lint, as websocket.ru says.
require "json"
require "uri"

# Records what an attached engine is told, wherever it runs.
class FileEngine
  def initialize(path)
    @path = path
  end

  def subscribe(channel, match)
    append("subscribe #{channel} #{match.inspect} #{Process.pid}")
  end

  def unsubscribe(channel, match)
    append("unsubscribe #{channel} #{match.inspect} #{Process.pid}")
  end

  def publish(channel, message)
    append("publish #{channel} #{message} #{Process.pid}")
    Up.publish(channel, message, false)
  end

  # File.open with "a" (Opal's File.write takes no mode: it would truncate).
  def append(line)
    File.open(@path, "a") { |file| file.write("#{line}\n") }
  end
end

ENGINE = ENV["UP_TEST_ENGINE_LOG"] ? Up::PubSub.attach(FileEngine.new(ENV["UP_TEST_ENGINE_LOG"])) : nil

# Subscribes on open, then runs what it is sent.
class Commands
  def on_open(client)
    params = URI.decode_www_form(client.env["QUERY_STRING"]).to_h
    channels = params["c"].to_s.split(",")
    options = { match: params["glob"] ? :glob : nil }
    options[:as] = :binary if params["as"] == "binary"
    channels.each do |channel|
      if params["block"]
        client.subscribe(channel, **options) { |ch, message| client.write("block #{ch} #{message}") }
      else
        client.subscribe(channel, **options)
      end
    end
    client.write("subscribed #{Process.pid}")
  end

  def on_message(client, data)
    return glob_command(client, JSON.parse(data)) if data.start_with?("[")

    return client.write("active #{@server_sub.cancel.nil? && @server_sub.active?}") if data == "serverend"

    command, rest = data.include?(" ") ? data.split(" ", 2) : [nil, data]
    case command
    when nil then client.publish(*rest.split(":", 2))
    when "local" then Up.publish(*rest.split(":", 2), false)
    when "bytes" then Up.publish(rest, [0xff, 0x00].pack("C*"), false)
    when "engine" then Up.publish(*rest.split(":", 2), ENGINE)
    when "unsub" then client.unsubscribe(rest)
    when "serversub" then server_subscribe(client, rest)
    end
  end

  def server_subscribe(client, pattern)
    @server_sub = Up.subscribe(pattern, match: :glob) do |channel, message|
      client.write("server #{channel} #{message.bytes.map { |b| format("%02x", b) }.join} #{message.encoding}")
    end
    client.write("server subscribed")
  end

  def glob_command(client, command)
    kind, name = command
    if kind == "sub"
      client.subscribe(name, match: :glob) { |channel, _message| client.write(JSON.generate(["got", name, channel])) }
    else
      Up.publish(name, "x")
    end
  end
end

handler = Commands.new
run lambda { |env|
  next [200, {}, [Process.pid.to_s]] unless env["rack.upgrade?"]

  env["rack.upgrade"] = handler
  [101, {}, []]
}
