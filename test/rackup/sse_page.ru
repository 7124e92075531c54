# frozen_string_literal: true

# The app of test_browser_sse_http2.rb, on up_ruby and up: GET / is an HTML page (the test's
# script runs in it), /events an event stream of three ticks that stays open, /ws a WebSocket
# that says (to the page and on stderr, for the test) which protocol its request came over,
# any other path answers its request's SERVER_PROTOCOL.

# Three events; the client closes the stream.
class Ticks
  def on_open(client)
    3.times { |i| client.write("tick #{i}", id: i) }
  end
end

# Tells which protocol carried the WebSocket's request, then echoes.
class Protocol
  def on_open(client)
    $stderr.puts "websocket opened over #{client.env["SERVER_PROTOCOL"]}"
    client.write("opened over #{client.env["SERVER_PROTOCOL"]}")
  end

  def on_message(client, data)
    client.write(data)
  end
end

PAGE = "<!doctype html><html lang=en><meta charset=utf-8><title>events</title><body></body></html>"

run lambda { |env|
  case env["PATH_INFO"]
  when "/"
    [200, { "content-type" => "text/html; charset=utf-8" }, [PAGE]]
  when "/events"
    env["rack.upgrade"] = Ticks.new if env["rack.upgrade?"] == :sse
    [200, { "content-type" => "text/plain" }, ["no event stream"]]
  when "/ws"
    env["rack.upgrade"] = Protocol.new if env["rack.upgrade?"] == :websocket
    [200, { "content-type" => "text/plain" }, ["no websocket"]]
  else
    [200, { "content-type" => "text/plain" }, [env["SERVER_PROTOCOL"]]]
  end
}
