# test/rackup/json_const.ru as an H2O mruby handler (mruby, not MRI: no frozen literals, no
# Rack). bench/config/h2o.conf.template loads it with mruby.handler-file; the last value is
# the Rack-like app H2O calls.
headers = { "content-type" => "application/json" }
value = "bar"

Proc.new do |env|
  if env["REQUEST_METHOD"] == "GET" && env["PATH_INFO"] == "/"
    [200, headers.dup, [JSON.generate({ "foo" => value })]]
  else
    [404, headers.dup, ['{"error":"not found"}']]
  end
end
