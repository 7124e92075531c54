# frozen_string_literal: true

# A classic Sinatra app, unmodified Sinatra from RubyGems, on either runtime:
#   bundle exec exe/up_ruby -p 3000 examples/sinatra/config.ru
#   bundle exec exe/up_node -p 3000 examples/sinatra/config.ru
# then `curl http://localhost:3000/hello/Ada`. See app.rb for its routes.
require_relative "app"

run Sinatra::Application
