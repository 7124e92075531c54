# frozen_string_literal: true

# For test/test_logs.rb: /errors writes a line to rack.errors, /raise raises, /invalid returns
# a status no response may have; anything else answers "ok".
run lambda { |env|
  case env["PATH_INFO"]
  when "/errors"
    env["rack.errors"].puts("rack.errors line from #{Process.pid}")
    env["rack.errors"].flush
    [200, {}, ["written"]]
  when "/raise" then raise "boom from the app"
  when "/invalid" then [99, {}, ["x"]]
  else [200, {}, ["ok"]]
  end
}
