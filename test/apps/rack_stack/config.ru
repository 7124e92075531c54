# frozen_string_literal: true

require "json"
require "rack/session"

# A plain Rack app as Rack's README and SPEC teach: a Rack::Builder stack of Rack's own
# middleware (static files, a cookie session with its default Marshal coder, method
# override, ETag and conditional GET, content length, gzip, HEAD), `map` to mount apps
# under paths, Rack::Files for a directory, and Rack::Request/Response in the app.
dir = __dir__

use Rack::Static, urls: ["/public"], root: dir
use Rack::Session::Cookie, secret: "c" * 64, key: "stack.session"
use Rack::MethodOverride
use Rack::ConditionalGet
use Rack::ETag
use Rack::ContentLength
use Rack::Deflater
use Rack::Head

map "/files" do
  run Rack::Files.new(File.join(dir, "files"))
end

map "/api" do
  run lambda { |env|
    req = Rack::Request.new(env)
    body = { "path" => req.path_info, "params" => req.params, "method" => req.request_method }
    [200, { "content-type" => "application/json" }, [JSON.generate(body)]]
  }
end

run lambda { |env|
  req = Rack::Request.new(env)
  res = Rack::Response.new
  session = req.session
  case [req.request_method, req.path_info]
  when ["GET", "/"]
    session["views"] = session["views"].to_i + 1
    res.write("Views: #{session['views']}\n")
    res.write("Language: #{req.cookies['lang'] || 'none'}\n")
  when ["POST", "/lang"]
    res.set_cookie("lang", { value: req.params["lang"], path: "/", http_only: true })
    res.redirect("/")
  when ["DELETE", "/session"]
    session.clear
    res.status = 204
  when ["GET", "/big"]
    res["content-type"] = "text/plain"
    res.write("All work and no play. " * 200)
  when ["GET", "/cached"]
    res["cache-control"] = "public, max-age=60"
    res.write("cached text\n")
  else
    res.status = 404
    res.write("Not found: #{req.path_info}\n")
  end
  res.finish
}
