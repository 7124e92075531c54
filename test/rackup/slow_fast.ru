# frozen_string_literal: true

# Two routes: /slow sleeps 1 s (an app waiting on a database or an API), /fast answers at
# once. bench/slow_call sends slow calls, then times a fast one: with threads the fast one
# should not wait for the slow ones. When SLOW_CALL_LOG names a file, each /slow call appends
# one line to it as it starts, so the client knows the call reached the app without guessing.
log = ENV["SLOW_CALL_LOG"]

run lambda { |env|
  case env["PATH_INFO"]
  when "/slow"
    File.write(log, "slow\n", mode: "a") if log
    sleep 1
    [200, { "content-type" => "text/plain" }, ["slow"]]
  when "/fast"
    [200, { "content-type" => "text/plain" }, ["fast"]]
  else
    [404, { "content-type" => "text/plain" }, ["not found"]]
  end
}
