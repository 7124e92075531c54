# frozen_string_literal: true

# A large response as an Array of 1 MB Strings, ARRAY_BODY_MB of them (default 5), built once
# when the app loads: bench/slow_reader serves it to a client that reads slowly, to see what
# the server's CPU time does as the body grows. Only the server's work is measured, not Ruby
# building the body. The server computes the content-length from the Array.
megabytes = Integer(ENV.fetch("ARRAY_BODY_MB", "5"))
part = ("0123456789abcdef" * 65_536).freeze # 16 * 65,536 = 1 MiB
body = Array.new(megabytes, part).freeze

run ->(_env) { [200, { "content-type" => "text/plain" }, body] }
