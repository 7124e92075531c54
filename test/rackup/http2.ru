# frozen_string_literal: true

# Opal only (up, up_node): the app of the HTTP/2 tests (test/test_up_http2.rb,
# test/test_up_node_http2.rb). /env, /echo, /stream and /hints as in features.ru; /events an
# event stream of three ticks; /ws a WebSocket that greets with its SERVER_PROTOCOL and echoes; /fields
# answers with the HTTP/1.1 connection fields that HTTP/2 forbids (RFC 9113 §8.2.2); /slow
# streams "first\n", and "last\n" a second later from a JS timer, so that a stream is in
# flight while the test acts; anything else answers its path.
require "json"

# Three events, then the end of the stream.
class Ticker
  def on_open(client)
    3.times { |i| client.write("tick #{i}", id: i) }
    client.close
  end
end

# Greets with the protocol its request came over, then echoes.
class Echo
  def on_open(client)
    client.write("hello #{client.env["SERVER_PROTOCOL"]}")
  end

  def on_message(client, data)
    client.write(data)
  end
end

run lambda { |env|
  case env["PATH_INFO"]
  when "/env"
    plain = env.select { |_key, value| value.is_a?(String) || value == true || value == false }
    plain["rack.early_hints"] = env["rack.early_hints"].class.name
    [200, { "content-type" => "application/json" }, [JSON.generate(plain)]]
  when "/echo"
    all = env["rack.input"].read
    [200, { "content-type" => "text/plain" }, ["#{all.bytesize}|#{all[0, 3]}|#{env["CONTENT_LENGTH"]}"]]
  when "/stream"
    body = lambda do |stream|
      3.times { |i| stream.write("part #{i}\n") }
      stream.close
    end
    [200, { "content-type" => "text/plain" }, body]
  when "/hints"
    env["rack.early_hints"].call({ "link" => ["</a.css>; rel=preload", "</b.js>; rel=preload"] })
    [200, { "content-type" => "text/plain" }, ["after hints"]]
  when "/events"
    env["rack.upgrade"] = Ticker.new if env["rack.upgrade?"] == :sse
    [200, {}, []]
  when "/ws"
    env["rack.upgrade"] = Echo.new if env["rack.upgrade?"] == :websocket
    [200, {}, []]
  when "/fields"
    [200, { "connection" => "close", "keep-alive" => "timeout=5", "transfer-encoding" => "chunked",
            "upgrade" => "h2c", "x-kept" => "yes" }, ["fields"]]
  when "/slow"
    body = lambda do |stream|
      stream.write("first\n")
      last = lambda do
        stream.write("last\n")
        stream.close
      end
      `setTimeout(#{last}, 1000)`
    end
    [200, { "content-type" => "text/plain" }, body]
  else
    [200, { "content-type" => "text/plain" }, [env["PATH_INFO"]]]
  end
}
