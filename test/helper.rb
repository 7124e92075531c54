# frozen_string_literal: true

# Shared by every Ruby test: minitest, a timeout on every test (a hang fails instead of
# stalling CI), an in-process server on a free loopback port, and a raw HTTP client.
require "minitest/autorun"
require "timeout"
require "stringio"
require "up"
require_relative "support/http_client"
require_relative "support/test_server"

module UpTestTimeout
  # Raised inside a test that runs too long, so minitest records it as that test's error.
  class TestTookTooLong < Timeout::Error; end

  LIMIT = Integer(ENV.fetch("UP_TEST_TIMEOUT", "60"))

  def time_it(&block)
    t0 = Minitest.clock_time
    Timeout.timeout(LIMIT, TestTookTooLong, &block)
  ensure
    self.time = Minitest.clock_time - t0
  end
end
Minitest::Test.prepend(UpTestTimeout)

module UpTestHelpers
  include HTTPClient

  # Starts a server for app (one app thread unless said otherwise) for the length of the test.
  def start_server(app, **options)
    server = TestServer.new(app, **options)
    (@servers ||= []) << server
    @port = server.port
    server
  end

  def teardown
    close_sockets
    (@servers || []).each(&:stop)
    super
  end
end
