# frozen_string_literal: true

# An app whose calls either compute (holding the GVL for about a millisecond), wait (a
# millisecond on a socket that never becomes readable, the GVL released) or, given
# UP_TEST_REDIS_URL, GET a key from that Redis (through hiredis, one connection per thread), for
# the tests of where a worker's loop runs (test/test_loop_placement.rb). PUT /behaviour/compute
# and PUT /behaviour/wait switch it while it serves; it starts as UP_TEST_BEHAVIOUR says, else
# computing. Every other request answers its own query string, so a client can tell whose
# response it got.
require "io/wait"
require "socket"

behaviour = ENV.fetch("UP_TEST_BEHAVIOUR", "compute")
quiet, _peer = UNIXSocket.pair

if (redis_url = ENV.fetch("UP_TEST_REDIS_URL", nil))
  require "redis-client"
  require "hiredis-client"
  redis = RedisClient.config(url: redis_url, driver: :hiredis, timeout: 5.0)
end

compute = lambda do
  deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 0.001
  x = 0
  x += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  x
end

run lambda { |env|
  if env["REQUEST_METHOD"] == "PUT" && (m = %r{\A/behaviour/(compute|wait)\z}.match(env["PATH_INFO"]))
    behaviour = m[1]
    next [200, { "content-type" => "text/plain" }, [behaviour]]
  end

  case behaviour
  when "wait" then quiet.wait_readable(0.001)
  when "redis" then (Thread.current[:loop_placement_redis] ||= redis.new_client).call("GET", "key")
  else compute.call
  end
  [200, { "content-type" => "text/plain" }, [env["QUERY_STRING"]]]
}
