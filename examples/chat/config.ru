# frozen_string_literal: true

# A chat room on WebSockets and pub/sub, in plain Rack, served by every worker of a cluster,
# on any of the three runtimes (the same command, another name: up_ruby, up_node, up):
#
#   bundle exec exe/up_ruby -w 2 examples/chat/config.ru
#
# then open http://localhost:3000/ in two browser windows, join each with a name and talk.
# Each page says which worker holds its WebSocket; members on different workers hear each
# other because a publish reaches every worker (chat_member.rb).
#
# GET / is the page, /chat.js, /chat.css and /favicon.svg its script, style and icon (page/:
# no build step, nothing from elsewhere); /chat is the WebSocket. The app serves them itself,
# with the headers below: a public/ directory here would be served by the server before the
# app, without them (README, Static files).
require_relative "chat_member"

files = {
  "/" => ["index.html", "text/html; charset=utf-8"],
  "/chat.js" => ["chat.js", "text/javascript; charset=utf-8"],
  "/chat.css" => ["chat.css", "text/css; charset=utf-8"],
  "/favicon.svg" => ["favicon.svg", "image/svg+xml"]
}.to_h { |path, (name, type)| [path, [File.read(File.join(__dir__, "page", name)).freeze, type]] }

# The page loads only its own files and talks only to its own origin (in CSP 3, 'self'
# covers ws: to the same host): even a rendering bug could not run a script from a message.
headers = {
  "content-security-policy" => "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options" => "nosniff"
}

# A browser sends the page's origin with a WebSocket upgrade: another site's page may not
# join the room in its visitor's name (RFC 6455 §10.2).
same_origin = lambda do |env|
  origin = env["HTTP_ORIGIN"]
  origin.nil? || origin == "http://#{env["HTTP_HOST"]}" || origin == "https://#{env["HTTP_HOST"]}"
end

text = ->(status, message, extra = {}) { [status, { "content-type" => "text/plain", **extra }, ["#{message}\n"]] }

run lambda { |env|
  if env["PATH_INFO"] == "/chat"
    next text.call(400, "A WebSocket endpoint.") unless env["rack.upgrade?"] == :websocket
    next text.call(403, "Not from another site's page.") unless same_origin.call(env)

    env["rack.upgrade"] = ChatMember.new
    next [101, {}, []]
  end

  body, type = files[env["PATH_INFO"]]
  next text.call(404, "Not found.") unless body
  next text.call(405, "GET only.", "allow" => "GET, HEAD") unless %w[GET HEAD].include?(env["REQUEST_METHOD"])

  [200, { "content-type" => type, **headers }, [body]]
}
