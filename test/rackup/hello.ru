# frozen_string_literal: true

# Hello world: the seed benchmark app.
run ->(_env) { [200, { "content-type" => "text/plain" }, ["Hello World"]] }
