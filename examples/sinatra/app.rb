# frozen_string_literal: true

require "sinatra"
require "json"

# A small classic Sinatra app (top-level routes) that runs unmodified on up_ruby (MRI) and
# up_node (Opal on Node): params from the path, the query and form bodies, content types,
# halt, redirect, an encrypted cookie session, ERB views with a layout and an inline
# template, error handlers, and Sinatra's default rack-protection. examples/sinatra/config.ru
# runs it.

# Sinatra's default session: an encrypted cookie that rack-session fills with Marshal, whose
# bytes are the same on every runtime, so a cookie made by one opens on the others. It needs
# a secret of at least 64 bytes; this one is for development only.
DEV_SECRET = "up-example-sinatra-development-secret-do-not-use-in-production-0123456789"
enable :sessions
set :session_secret, ENV.fetch("SESSION_SECRET", DEV_SECRET)
# Errors go to the error handlers below, not to the development page with a backtrace.
set :show_exceptions, false

# Raised by GET /teapot, answered by its own error handler.
class TeapotError < StandardError; end

before do
  headers "x-served-by" => "sinatra"
end

get "/" do
  "Hello from Sinatra\n"
end

get "/hello/:name" do
  "Hello, #{params[:name]}!\n"
end

get "/items/:id" do
  content_type :json
  JSON.generate("id" => params[:id].to_i, "name" => "item #{params[:id]}")
end

post "/greet" do
  name = params[:name].to_s
  halt 422, "name is required\n" if name.empty?
  "Nice to meet you, #{name}.\n"
end

get "/admin" do
  halt 403, "forbidden\n"
end

get "/old" do
  redirect to("/hello/Ada")
end

# An ERB view in the layout (views/page.erb, views/layout.erb).
get "/page/:name" do
  @name = params[:name]
  @items = params.fetch("items", "tea,cake").split(",")
  erb :page
end

# A template after __END__ in this file.
get "/inline" do
  erb :note, layout: false, locals: { count: 3 }
end

# The session: each POST /visits counts one more visit, GET /visits reads the count.
get "/visits" do
  content_type :json
  JSON.generate("visits" => session["visits"].to_i)
end

post "/visits" do
  session["visits"] = session["visits"].to_i + 1
  content_type :json
  JSON.generate("visits" => session["visits"])
end

get "/teapot" do
  raise TeapotError, "short and stout"
end

error TeapotError do
  status 418
  "I'm a teapot: #{env["sinatra.error"].message}\n"
end

not_found do
  "Nothing at #{request.path_info}\n"
end

__END__

@@ note
<p>Inline, <%= count %> times: <% count.times do |i| %><%= i %> <% end %></p>
