# frozen_string_literal: true

require "sinatra/base"
require "json"

# A modular Sinatra app written as Sinatra's README teaches, with its defaults: the cookie
# session as `enable :sessions` makes it (rack-session, Marshal inside), ERB views in a
# layout, a flash message kept in the session for one request, redirects, JSON, a static
# file from public/, halt, and error pages.
class NotesApp < Sinatra::Base
  enable :sessions
  set :session_secret, "s" * 64
  set :root, __dir__

  helpers do
    def notes = (session[:notes] ||= [])
    def flash_message = session.delete(:flash)
  end

  get "/" do
    @flash = flash_message
    @notes = notes
    erb :index
  end

  post "/notes" do
    text = params[:text].to_s.strip
    halt 422, "a note needs text\n" if text.empty?

    notes << { "text" => text, "at" => notes.size + 1 }
    session[:flash] = "Saved “#{text}”"
    redirect to("/")
  end

  get "/notes.json" do
    content_type :json
    { notes: notes, count: notes.size, visits: session[:visits] }.to_json
  end

  post "/visit" do
    session[:visits] = (session[:visits] || 0) + 1
    "visits: #{session[:visits]}\n"
  end

  get "/private" do
    halt 401, "sign in first\n"
  end

  get "/boom" do
    raise ArgumentError, "no such thing"
  end

  post "/logout" do
    session.clear
    redirect to("/")
  end

  not_found do
    "Nothing at #{request.path_info}\n"
  end

  error ArgumentError do
    status 400
    "Bad request: #{env['sinatra.error'].message}\n"
  end
end
