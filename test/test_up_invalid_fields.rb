# frozen_string_literal: true

# A header field the engine refuses, on `up` as on up_ruby: the app's bug is a 500 and a log
# line in up_ruby's words, whether the field came with a response (ext/up/node/exchange.c) or
# with an upgrade (websocket.c), which share one walk of the fields (ext/up/node/fields.c). An
# upgrade's content-length is no bug on either: the upgrade's own head replaces it (a 101
# carries none, RFC 9110 §8.6).
require_relative "helper"
require_relative "support/up_process"

class TestUpInvalidFields < Minitest::Test
  include UpTestHelpers
  include UpProcess

  APP = "test/rackup/invalid_fields.ru"
  UPGRADE = "Host: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n" \
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
  REFUSED = {
    "/length" => 'invalid content-length "abc"',
    "/value" => 'the value of response header "x-note" has CR, LF or NUL',
    "/upgrade/value" => 'the value of response header "x-upgrade-note" has CR, LF or NUL'
  }.freeze

  def test_a_refused_field_is_a_500_logged_in_up_rubys_words_on_up_and_up_ruby
    each_runtime do |server, port|
      REFUSED.each do |path, message|
        res = path.start_with?("/upgrade/") ? upgrade(path, port) : get(path, port: port)
        assert_equal 500, res.status, "#{path}: #{res.raw}"
        server.wait_for(/#{Regexp.escape(message)}/)
      end
      assert_equal "ok", get("/", port: port).body, "the server goes on"
    end
  end

  def test_an_upgrades_content_length_is_dropped_on_up_and_up_ruby
    each_runtime do |_server, port|
      res = upgrade("/upgrade/length", port)
      assert_equal 101, res.status, res.raw
      assert_nil res["content-length"], res.raw
    end
  end

  private

  # Yields up_ruby's process and port, then up's, each serving APP with one worker.
  def each_runtime
    ruby = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", APP)
    begin
      yield ruby, ruby.port
    ensure
      ruby.stop
    end
    up = start_up(APP)
    yield up, up.port
  end

  def upgrade(path, port)
    raw_request("GET #{path} HTTP/1.1\r\n#{UPGRADE}", port: port)
  end
end
