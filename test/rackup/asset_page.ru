# frozen_string_literal: true

# A page with many assets, as a browser loads a site (test/test_browser_http2.rb): / is an HTML
# page that links STYLES stylesheets and shows IMAGES images from /assets/ (files the server is
# told to serve with --static /assets=DIR; the test writes them), and APP_IMAGES images the app
# draws itself under /app/. Each image is a square of its own colour, drawn at its own size
# (the test checks it decoded); each stylesheet sets its own custom property on the page.
STYLES = 20
IMAGES = 20
APP_IMAGES = 10

square = lambda do |size, colour|
  %(<svg xmlns="http://www.w3.org/2000/svg" width="#{size}" height="#{size}">) +
    %(<rect width="#{size}" height="#{size}" fill="#{colour}"/></svg>)
end

page = [
  "<!DOCTYPE html>",
  # No icon to ask for: the browser's request for /favicon.ico would be a 51st.
  %(<html><head><meta charset="utf-8"><title>assets</title><link rel="icon" href="data:,">),
  *Array.new(STYLES) { |i| %(<link rel="stylesheet" href="/assets/css/#{i}.css">) },
  "</head><body>",
  *Array.new(IMAGES) { |i| %(<img src="/assets/img/#{i}.svg" alt="static #{i}">) },
  *Array.new(APP_IMAGES) { |i| %(<img src="/app/#{i}.svg" alt="app #{i}">) },
  "</body></html>"
].join("\n")

run lambda { |env|
  path = env["PATH_INFO"]
  if path == "/"
    [200, { "content-type" => "text/html; charset=utf-8" }, [page]]
  elsif (n = path[%r{\A/app/(\d+)\.svg\z}, 1]) && n.to_i < APP_IMAGES
    [200, { "content-type" => "image/svg+xml" }, [square.call(100 + n.to_i, "#0000#{(n.to_i * 20 + 16).to_s(16)}")]]
  else
    [404, { "content-type" => "text/plain" }, ["not found"]]
  end
}
