# frozen_string_literal: true

# The app of the restart and supervision tests (test/test_restart.rb, test/test_cluster.rb):
# answers "VERSION PID", VERSION read once when the app loads from $UP_TEST_VERSION_FILE (so a
# restart that loads the app again shows the new one), and appends "ID PID" to $UP_TEST_IDS for
# each ?id=ID (test/support/load_generator.rb). Each request takes $UP_TEST_DELAY seconds
# (default 5 ms), so some are always in flight when a signal comes. GET /grow?mb=N keeps N more
# megabytes resident in the worker that serves it (for --worker-max-rss). GET /origin answers
# (after ?sleep=SECONDS) the pids that served requests in this memory, the oldest first and
# this process last: a worker forked from a template that had served (--refork-after) names
# the template just before itself.
version_file = ENV["UP_TEST_VERSION_FILE"]
version = version_file ? File.read(version_file).strip : "1"
ids_path = ENV["UP_TEST_IDS"]
delay = Float(ENV.fetch("UP_TEST_DELAY", "0.005"))
ids = {}
ids_lock = Mutex.new
hog = []
lineage = []

run lambda { |env|
  lineage << Process.pid unless lineage.last == Process.pid
  if env["PATH_INFO"] == "/origin"
    sleep Float(env["QUERY_STRING"][/\Asleep=([\d.]+)\z/, 1] || 0)
    return [200, { "content-type" => "text/plain" }, [lineage.join(" ")]]
  end

  if env["PATH_INFO"] == "/grow"
    hog << ("x" * (Integer(env["QUERY_STRING"][/\Amb=(\d+)\z/, 1]) * 1024 * 1024))
    return [200, { "content-type" => "text/plain" }, ["grew #{Process.pid}"]]
  end
  id = env["QUERY_STRING"][/\Aid=(.+)\z/, 1]
  if id && ids_path
    io = ids_lock.synchronize { ids[Process.pid] ||= File.open(ids_path, "a").tap { |f| f.sync = true } }
    io.write("#{id} #{Process.pid}\n")
  end
  sleep delay
  [200, { "content-type" => "text/plain" }, ["#{version} #{Process.pid}"]]
}
