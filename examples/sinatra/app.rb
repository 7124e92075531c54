# frozen_string_literal: true

require "sinatra"
require "json"

# A small classic Sinatra app (top-level routes): params from the path, the query and form
# bodies, a JSON response, a halt and a before filter. examples/sinatra/config.ru runs it.

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
