# frozen_string_literal: true

# examples/json_api's GET without Redis: the value lives in memory, the document is generated
# per request. bench/config/json_const_h2o.rb is the same handler in H2O's mruby, so the pair
# measures the server and its Ruby, not Redis.
require "json"

headers = { "content-type" => "application/json" }.freeze
value = "bar"

run lambda { |env|
  if env["REQUEST_METHOD"] == "GET" && env["PATH_INFO"] == "/"
    [200, headers.dup, [JSON.generate("foo" => value)]]
  else
    [404, headers.dup, ['{"error":"not found"}']]
  end
}
