# frozen_string_literal: true

# Responses with a header field the server must refuse or drop, the same on every runtime
# (test/test_up_invalid_fields.rb): /length a content-length that is no number, /value a field
# value holding a CR; /upgrade/length and /upgrade/value the same fields with a WebSocket
# upgrade (the upgrade's own head replaces a content-length); anything else a plain "ok".
class Greeter
  def on_open(client)
    client.write("open")
  end
end

BAD = { "length" => { "content-length" => "abc" }, "value" => { "x-note" => "a\rb" },
        "upgrade/length" => { "content-length" => "abc" }, "upgrade/value" => { "x-upgrade-note" => "a\rb" } }.freeze

run lambda { |env|
  path = env["PATH_INFO"]
  if (m = path.match(%r{\A/upgrade/(length|value)\z}))
    env["rack.upgrade"] = Greeter.new
    [200, BAD.fetch("upgrade/#{m[1]}").dup, []]
  elsif (fields = BAD[path.delete_prefix("/")])
    [200, fields.dup, ["body"]]
  else
    [200, { "content-type" => "text/plain" }, ["ok"]]
  end
}
