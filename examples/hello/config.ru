# frozen_string_literal: true

# The smallest app: `bundle exec exe/up_ruby examples/hello/config.ru`, then
# `curl http://localhost:3000/`.
run ->(_env) { [200, { "content-type" => "text/plain" }, ["Hello World\n"]] }
