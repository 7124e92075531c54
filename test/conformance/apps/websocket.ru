# frozen_string_literal: true

# WebSockets through the upgrade API (docs/websockets.md), for test_websocket.rb:
# one handler per path, each doing one thing the suite checks. What happens inside the server
# is reported to the test by the app itself: a WebSocket to /observe receives every event of
# the others as a JSON array, so no test reads a server's internals and every runtime is
# checked the same way. Every connection names its test in its query string (its tag): an
# observer hears only the connections of its own tag, so an event a test's connection causes
# late (an on_close after the test has gone) never reaches the next test's observer. Not under Rack::Lint: an upgrade's response is no response the SPEC
# describes (its body is never sent, its status may be 0).
require "json"

# The /observe connections by tag, and what the handlers tell them.
module Events
  @observers = {}

  def self.tag(client)
    client.env["QUERY_STRING"].to_s
  end

  def self.add(client)
    (@observers[tag(client)] ||= []) << client
  end

  def self.remove(client)
    @observers.fetch(tag(client), []).delete(client)
  end

  # Tells the observers of client's tag.
  def self.emit(client, *event)
    @observers.fetch(tag(client), []).each { |observer| observer.write(JSON.generate(event)) }
  end

  # A message's bytes as hex and its encoding, so that binary data fits in JSON.
  def self.describe(data)
    [data.bytes.map { |b| format("%02x", b) }.join, data.encoding.to_s]
  end
end

# /observe
class Observer
  def on_open(client)
    Events.add(client)
  end

  def on_close(client)
    Events.remove(client)
  end
end

# /echo: every callback reported, every message echoed; a stop gets a goodbye.
class Recorder
  def on_open(client)
    Events.emit(client, "open", client.protocol.to_s, client.open?, client.pubsub?)
  end

  def on_message(client, data)
    Events.emit(client, "message", *Events.describe(data))
    client.write(data)
  end

  def on_drained(client)
    Events.emit(client, "drained")
  end

  def on_shutdown(client)
    Events.emit(client, "shutdown")
    client.write("goodbye")
  end

  def on_close(client)
    Events.emit(client, "close", client.open?)
  end
end

# /types: what write takes and refuses; /bad_utf8: a text String that is not UTF-8.
class Types
  def on_open(client)
    if client.env["PATH_INFO"] == "/bad_utf8"
      Events.emit(client, "bad utf-8", attempt { client.write([0xff].pack("C").force_encoding("UTF-8")) })
    else
      Events.emit(client, "number", attempt { client.write(42) })
      Events.emit(client, "latin-1", attempt { client.write("é".encode("ISO-8859-1")) })
      Events.emit(client, "utf-8 bytes", attempt { client.write([0xc3, 0xa9].pack("C*").force_encoding("UTF-8")) })
    end
  end

  def attempt
    yield.to_s
  rescue StandardError => e
    e.class.name
  end
end

# /close: on a message, a last write, the close, and what the client says after each.
class Closer
  def on_message(client, _data)
    client.write("last")
    client.close
    Events.emit(client, "after close", client.write("late"), client.open?, client.pending)
  end

  def on_close(client)
    Events.emit(client, "closed", client.open?, client.write("x"), client.pending)
  end
end

# /raise: "raise" raises in on_message; anything else is echoed.
class Raiser
  def on_message(client, data)
    raise "boom from the handler" if data == "raise"

    client.write(data)
  end
end

# /pending: 2 MB written at once to a client that reads later.
class Pending
  CHUNK = ("x" * (256 * 1024)).b

  def on_open(client)
    8.times { client.write(CHUNK) }
    Events.emit(client, "pending", client.pending.positive?)
  end

  def on_drained(client)
    Events.emit(client, "drained", client.pending)
  end
end

# /swap: the first message hands the connection to a Recorder.
class Swapper
  def on_message(client, _data)
    client.handler = Recorder.new
  end

  def on_close(client)
    Events.emit(client, "first closed")
  end
end

# /timeout: the ping interval, read and set to a second.
class Pinger
  def on_open(client)
    before = client.timeout
    client.timeout = 1
    Events.emit(client, "timeout", format("%.1f", before), format("%.1f", client.timeout))
  end
end

# /block: "block PATH" keeps on_message busy for a second (no sleep: Opal has none that blocks),
# with "began" appended to the file at PATH before and "ended" after: the test learns there
# when the block runs, which no frame can tell it on a runtime whose one thread would send
# that frame only once the callback returns. Every message is echoed after it.
class Blocker
  def on_message(client, data)
    if data.start_with?("block ")
      path = data.split(" ", 2).last
      append(path, "began")
      t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      nil while Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0 < 1
      append(path, "ended")
    end
    client.write(data)
  end

  # File.open with "a" (Opal's File.write takes no mode: it would truncate).
  def append(path, line)
    File.open(path, "a") { |file| file.write("#{line}\n") }
  end
end

# /missing: a handler whose on_message is answered by method_missing, as a delegator's are.
class Forwarder
  def respond_to_missing?(name, include_all = false)
    name == :on_message || super
  end

  def method_missing(name, *args)
    return super unless name == :on_message

    client, data = args
    client.write("forwarded #{data}")
  end
end

HANDLERS = {
  "/observe" => Observer.new, "/echo" => Recorder.new, "/types" => Types.new, "/bad_utf8" => Types.new, "/close" => Closer.new,
  "/raise" => Raiser.new, "/pending" => Pending.new, "/swap" => Swapper.new, "/timeout" => Pinger.new,
  "/block" => Blocker.new, "/fields" => Recorder.new, "/wrong_protocol" => Recorder.new, "/refuse" => Recorder.new,
  "/missing" => Forwarder.new
}.freeze

HEADERS = {
  "/fields" => { "set-cookie" => "a=1", "sec-websocket-protocol" => "chat", "content-type" => "text/plain" },
  "/wrong_protocol" => { "sec-websocket-protocol" => "nope" }
}.freeze

run lambda { |env|
  path = env["PATH_INFO"]
  next [200, {}, ["#{env.key?("rack.upgrade?")} #{env["rack.upgrade?"]}"]] if path == "/upgrade_p"

  handler = HANDLERS[path]
  next [404, {}, ["no such handler"]] unless handler && env["rack.upgrade?"]

  env["rack.upgrade"] = handler
  next [403, {}, ["never sent"]] if path == "/refuse"

  [101, HEADERS.fetch(path, {}), ["never sent"]]
}
