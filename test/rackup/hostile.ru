# frozen_string_literal: true

# The app of test/test_hostile_clients.rb. A small answer names its request (path and query),
# so a response handed to the wrong request shows. /big is 4 MiB, more than the socket buffers
# between a client and the server hold, for the clients that never read it; it is built once
# when the app loads, so that the test measures the server holding a response nobody takes,
# not Ruby building one.
big = ("0123456789abcdef" * 262_144).freeze # 16 * 262_144 = 4 MiB

run lambda { |env|
  if env["PATH_INFO"] == "/big"
    [200, { "content-type" => "application/octet-stream" }, [big]]
  else
    [200, { "content-type" => "text/plain" }, ["#{env["PATH_INFO"]}?#{env["QUERY_STRING"]}"]]
  end
}
