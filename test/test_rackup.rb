# frozen_string_literal: true

# `rackup -s up` finds UP! through lib/rackup/handler/up.rb and serves the app with the
# options rackup passes (:Host, :Port, -O pairs).
require_relative "helper"
require_relative "support/cli_process"
require "rackup"

class TestRackup < Minitest::Test
  include UpTestHelpers

  def test_rackup_dash_s_up_serves_the_app
    rackup = Gem.bin_path("rackup", "rackup")
    server = CLIProcess.new("-s", "up", "-o", "127.0.0.1", "-p", "0", "-O", "threads=2",
                            "examples/hello/config.ru",
                            command: [RbConfig.ruby, "-Ilib", rackup])
    assert_match(/threads 2/, server.output)
    assert_equal "Hello World\n", get("/", port: server.port).body
    server.signal(:INT)
    assert server.wait.success?, server.output
  ensure
    server&.stop
  end

  def test_handler_is_registered_under_up
    require "rackup/handler/up"
    assert_equal Up::RackHandler, Rackup::Handler.get("up")
  end
end
