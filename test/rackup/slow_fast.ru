# frozen_string_literal: true

# Two routes: /slow sleeps 1 s (an app waiting on a database or an API), anything else
# answers at once; the body is the path. Each /slow says when it starts, so a client can wait
# until its slow calls are in the app instead of sleeping: a line on stderr (the tests read
# it), and one appended to SLOW_CALL_LOG when that names a file (bench/slow_call reads it).
log = ENV["SLOW_CALL_LOG"]

run lambda { |env|
  if env["PATH_INFO"] == "/slow"
    $stderr.write("app: /slow started in #{Process.pid}\n")
    File.write(log, "slow\n", mode: "a") if log
    sleep 1
  end
  [200, { "content-type" => "text/plain" }, [env["PATH_INFO"]]]
}
