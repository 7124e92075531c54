# frozen_string_literal: true

require "open3"

# curl from a test, for the HTTP version it speaks: include it in a Minitest::Test.
module CurlClient
  # curl's body and the HTTP version it spoke ("2", "1.1").
  def curl(*args)
    out, err, status = Open3.capture3("curl", "-sS", "--max-time", "10", "-w", "\n%{http_version}", *args)
    assert status.success?, "curl #{args.join(" ")}: #{err}"
    body, _, version = out.rpartition("\n")
    [body, version]
  end
end
