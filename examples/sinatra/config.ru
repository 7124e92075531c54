# frozen_string_literal: true

# A classic Sinatra app, unmodified Sinatra from RubyGems, on up_ruby:
#   bundle exec exe/up_ruby -p 3000 examples/sinatra/config.ru
# then `curl http://localhost:3000/hello/Ada`. It does not run on up_node yet: the README's
# up_node section lists what stops Sinatra on Opal, file by file.
require_relative "app"

run Sinatra::Application
