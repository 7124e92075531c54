# frozen_string_literal: true

# A JSON API on Redis (json_api.rb says what it answers). Start Redis, then
#   bundle exec exe/up_ruby -p 3000 examples/json_api/config.ru
#   curl -d '{"foo":"bar"}' -H 'content-type: application/json' http://localhost:3000/
#   curl http://localhost:3000/
# REDIS_URL chooses the server (default redis://127.0.0.1:6379).
require_relative "json_api"

run JsonApi.new(url: ENV.fetch("REDIS_URL", "redis://127.0.0.1:6379"))
