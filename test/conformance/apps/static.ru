# frozen_string_literal: true

# What the static conformance tests serve behind their files (test_static_files.rb): a request
# no file answers comes here, and says so.
run ->(env) { [404, { "content-type" => "text/plain" }, ["app: #{env["REQUEST_METHOD"]} #{env["PATH_INFO"]}"]] }
