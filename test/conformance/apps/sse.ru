# frozen_string_literal: true

# Server-Sent Events through the upgrade API (docs/websockets.md), for
# test_sse.rb: / sends two events (one with several lines, an event name and an id) and stays
# open; /bye sends one and closes; /bad_field tries a name that would break the framing;
# /silent sends nothing (heartbeats only); /events tells what happened (opens, closes, what
# write raised), each line ending with the request's Last-Event-ID, which the tests make
# their own. Not under Rack::Lint, as websocket.ru says.

# What the handlers saw, for GET /events.
module Seen
  @lines = []

  def self.<<(line)
    @lines << line
  end

  def self.take
    lines = @lines
    @lines = []
    lines
  end
end

# /: two events, then silence until the client leaves.
class Feed
  def on_open(client)
    Seen << "open #{client.protocol} #{client.env["HTTP_LAST_EVENT_ID"]}"
    client.write("line one\nline two\r\nline three", event: "greeting", id: 7)
    client.write("plain")
  end

  def on_close(client)
    Seen << "close #{client.env["HTTP_LAST_EVENT_ID"]}"
  end
end

# /bye: one event and the end of the stream.
class Bye
  def on_open(client)
    client.write("bye")
    client.close
  end
end

# /bad_field: an event name with a line break is refused.
class BadField
  def on_open(client)
    begin
      client.write("x", event: "two\nlines")
    rescue ArgumentError => e
      Seen << "#{e.class.name} #{client.env["HTTP_LAST_EVENT_ID"]}"
    end
    client.close
  end
end

HANDLERS = { "/" => Feed.new, "/bye" => Bye.new, "/bad_field" => BadField.new, "/silent" => Object.new }.freeze

run lambda { |env|
  next [200, {}, [Seen.take.join("\n")]] if env["PATH_INFO"] == "/events"
  next [200, {}, ["plain"]] unless env["rack.upgrade?"] == :sse

  env["rack.upgrade"] = HANDLERS.fetch(env["PATH_INFO"])
  [200, { "x-feed" => "1", "content-type" => "text/plain" }, []]
}
