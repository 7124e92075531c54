# frozen_string_literal: true

require "sinatra"
require "json"

# A classic Sinatra app (`require "sinatra"`, routes at the top level) using what
# Sinatra's README shows beyond routes: filters, conditions and `pass`, streaming, cache
# headers (etag, last_modified, cache_control), send_file and attachment, custom headers
# and statuses, `url`, redirect back, inline templates and `erb` with locals.
set :public_folder, File.join(__dir__, "public")

before do
  headers "x-request-path" => request.path_info
end

after do
  response["x-after"] = "ran"
end

get "/" do
  erb "<h1><%= greeting %>, <%= name %></h1>", locals: { greeting: "Hi", name: params[:name] || "stranger" }
end

get "/agent", user_agent: /curl/ do
  "a curl\n"
end

get "/agent" do
  "someone else\n"
end

get "/numbers/:n" do
  pass unless params[:n] =~ /\A\d+\z/
  "number #{params[:n].to_i * 2}\n"
end

get "/numbers/*" do
  "not a number: #{params[:splat].first}\n"
end

get "/stream" do
  stream do |out|
    3.times { |i| out << "part #{i}\n" }
  end
end

get "/etag" do
  etag "fixed-version"
  "tagged\n"
end

get "/modified" do
  last_modified Time.utc(2024, 1, 2, 3, 4, 5)
  cache_control :public, max_age: 300
  "old news\n"
end

get "/download" do
  attachment "notes.txt"
  send_file File.join(__dir__, "public", "notes.txt")
end

get "/teapot" do
  status 418
  headers "x-brew" => "earl grey"
  body "short and stout\n"
end

get "/where" do
  content_type :json
  { url: url("/x"), to: to("/y"), uri: uri("/z", false), back: back.to_s }.to_json
end

post "/back" do
  redirect back
end

get "/items.?:format?" do
  items = %w[a b]
  params[:format] == "json" ? json_items(items) : items.join(",")
end

helpers do
  def json_items(items)
    content_type :json
    JSON.generate(items)
  end
end

not_found do
  "nothing at #{request.path}\n"
end
