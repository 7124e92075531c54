# frozen_string_literal: true

# The app of test_browser_sse_http2.rb, on up_ruby and up: GET / is an HTML page (the test's
# script runs in it), /events an event stream of three ticks that stays open, any other path
# answers its request's SERVER_PROTOCOL.

# Three events; the client closes the stream.
class Ticks
  def on_open(client)
    3.times { |i| client.write("tick #{i}", id: i) }
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
  else
    [200, { "content-type" => "text/plain" }, [env["SERVER_PROTOCOL"]]]
  end
}
