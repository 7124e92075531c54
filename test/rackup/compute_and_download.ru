# frozen_string_literal: true

# /compute keeps the GVL for two seconds (plain Ruby, no IO), after touching the file named by
# UP_TEST_MARKER so a test knows it has begun; /download answers 64 MiB; anything else "ok".
download = ("x" * (1024 * 1024)).freeze
marker = ENV.fetch("UP_TEST_MARKER", nil)

run lambda { |env|
  case env["PATH_INFO"]
  when "/compute"
    File.write(marker, "") if marker
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 2
    n = 0
    n += 1 while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
    [200, {}, ["computed"]]
  when "/download"
    [200, {}, Array.new(64, download)]
  else
    [200, {}, ["ok"]]
  end
}
