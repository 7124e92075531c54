# frozen_string_literal: true

# The tests' own HTTP client (test/support/http_client.rb), where a mistake would let other
# tests pass without the server doing what they assert: a real listening socket stands in for
# the server.
require_relative "helper"
require "socket"

class TestHTTPClient < Minitest::Test
  include HTTPClient

  def setup
    @listener = TCPServer.new("127.0.0.1", 0)
    @port = @listener.addr[1]
  end

  def teardown
    @sockets&.each(&:close)
    @peer&.close
    @listener.close
  end

  def test_a_server_that_closes_has_closed
    sock = connect
    accept.close
    assert closed_by_server?(sock, timeout: 5)
  end

  def test_a_silent_server_has_not_closed
    sock = connect
    accept
    refute closed_by_server?(sock, timeout: 0.2)
  end

  def test_a_server_that_sends_more_has_not_closed
    sock = connect
    accept.write("x")
    refute closed_by_server?(sock, timeout: 5)
  end

  private

  def accept
    @peer = @listener.accept
  end
end
