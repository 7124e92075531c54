# frozen_string_literal: true

# Shared by every Ruby test: minitest, a timeout on every test (a hang fails instead of
# stalling CI), an in-process server on a free loopback port, and a raw HTTP client.
require "minitest/autorun"
require "timeout"
require "stringio"
require "up"
require_relative "support/http_client"
require_relative "support/test_server"
require_relative "support/test_timeout"

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
