# frozen_string_literal: true

# A Roda app (routing tree, params, sessions, JSON, halt, cookies), unmodified Roda from
# RubyGems, on either runtime:
#   bundle exec exe/up_ruby -p 3000 examples/roda/config.ru
#   bundle exec exe/up_node -p 3000 examples/roda/config.ru
# then `curl http://localhost:3000/hello/Ada`. See app.rb for its routes.
require_relative "app"

run RodaExample.app
