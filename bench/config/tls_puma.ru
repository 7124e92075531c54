# frozen_string_literal: true

# Puma's app in bench/tls: test/rackup/hello.ru's answer at /, and below it the files of the
# directory in TLS_BENCH_ROOT through Rack::Files (a to_path body, which Puma reads and writes
# over TLS), the files UP! and nginx serve from the same directory in the same run.
require "rack/files"

files = Rack::Files.new(ENV.fetch("TLS_BENCH_ROOT"))
run lambda { |env|
  next [200, { "content-type" => "text/plain" }, ["Hello World"]] if env["PATH_INFO"] == "/"

  files.call(env)
}
