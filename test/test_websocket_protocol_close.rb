# frozen_string_literal: true

# WebSocket wire conformance on up_ruby, section 7 of the Autobahn TestSuite's case list: the
# closing handshake. Our own cases over real sockets (WSWireRunner), each whole, frame by frame
# and a byte at a time; the ids are Autobahn's, "up." cases are ours.
#
# RFC 6455 §5.5.1: a Close is answered with a Close, nothing is sent after it and whatever
# comes after the peer's Close is not data; the payload is empty or a two-byte code and a UTF-8
# reason, at most 125 bytes. §7.1.1: the server ends TCP first. §7.4.1-2 and the IANA registry
# (§11.7): codes 1000-1003, 1007-1014 and 3000-4999 may be sent; 1004 is reserved, 1005, 1006
# and 1015 must never be sent, the rest is unassigned, and receiving any of those fails the
# connection with 1002. A reason that is not UTF-8 fails it with 1007 (§8.1). UP! echoes the
# client's code, and answers an empty Close with an empty one. The cases every runtime must
# pass are in test/conformance/test_websocket_protocol.rb (run on up_ruby too), not repeated
# here: 7.1.3, 7.1.4, 7.3.1, 7.3.2, 7.3.6, 7.5.1 and the codes in IN_CONFORMANCE.
require_relative "helper"
require_relative "support/ws_wire_runner"

class TestWebSocketProtocolClose < Minitest::Test
  include UpTestHelpers
  include WSWireRunner

  HELLO = "Hello World!"
  KOSME = "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5".b # "κόσμε"

  VALID_CODES = [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000, 4999].freeze
  # Registered with IANA since Autobahn's list was written (Service Restart, Try Again Later,
  # Bad Gateway): valid to receive.
  REGISTERED_LATER = [1012, 1013, 1014].freeze
  INVALID_CODES = [0, 999, 1004, 1005, 1006, 1016, 1100, 2000, 2999].freeze
  # The codes test/conformance/test_websocket_protocol.rb sends (7.7, 7.9 and 7.13.1 there).
  IN_CONFORMANCE = [1000, 1001, 1011, 3000, 4999, 0, 999, 1004, 1005, 1006, 1015, 5000].freeze

  def test_sections_7_1_and_7_3_nothing_after_a_close_and_payload_sizes
    start_echo_server
    big = "BAsd7&jh23" * (256 * 1024 / 10)
    run_wire_cases([
      WSWireCase.new("7.1.1", "a message echoed, then a Close") do
        write text(HELLO)
        expect_message :text, HELLO
        write close(1000)
        expect_close 1000
      end,
      WSWireCase.new("7.1.2", "two Closes: one answer") do
        write close(1000), close(1000)
        expect_close 1000
      end,
      WSWireCase.new("7.1.5", "a Close between two fragments: the message never ends") do
        write text("fragment1", fin: false), close(1000), continuation("fragment2")
        expect_close 1000
      end,
      WSWireCase.new("7.1.6", "256 KiB, a text, a Close and a ping in one go: echoes may be cut by the Close, never follow it") do
        write text(big), text(HELLO), close(1000), ping
        maybe_message :text, big
        maybe_message :text, HELLO
        expect_close 1000
      end,
      WSWireCase.new("7.3.3", "a Close with a code and no reason") do
        write close(1000)
        expect_close 1000
      end,
      WSWireCase.new("7.3.4", "a Close with a code and a reason") do
        write close(1000, HELLO)
        expect_close 1000
      end,
      WSWireCase.new("7.3.5", "a Close with a reason of 123 bytes (payload 125)") do
        write close(1000, "*" * 123)
        expect_close 1000
      end,
      WSWireCase.new("up.7.1", "a Close whose reason is multi-byte UTF-8") do
        write close(1000, KOSME)
        expect_close 1000
      end,
      WSWireCase.new("up.7.2", "a Close after a ping, both answered in order") do
        write ping(HELLO), close(4001, "bye")
        expect_pong HELLO
        expect_close 4001
      end
    ])
  end

  def test_sections_7_5_to_7_13_close_codes_and_reasons
    start_echo_server
    cases = [
      WSWireCase.new("up.7.5.2", "a Close reason that ends inside a character") do
        write close(1000, KOSME.byteslice(0, 3))
        expect_close 1007
      end
    ]
    (VALID_CODES + REGISTERED_LATER).each_with_index do |code, i|
      next if IN_CONFORMANCE.include?(code)

      id = i < VALID_CODES.size ? "7.7.#{i + 1}" : "up.7.7.#{i + 1}"
      cases << WSWireCase.new(id, "the valid close code #{code} is echoed") do
        write close(code)
        expect_close code
      end
    end
    (INVALID_CODES + [1015]).each_with_index do |code, i|
      next if IN_CONFORMANCE.include?(code)

      id = i < INVALID_CODES.size ? "7.9.#{i + 1}" : "up.7.9.#{i + 1}"
      cases << WSWireCase.new(id, "the invalid close code #{code}") do
        write close(code)
        expect_close 1002
      end
    end
    cases << WSWireCase.new("7.13.2", "the close code 65535, past the private range") do
      write close(65_535)
      expect_close 1002
    end
    run_wire_cases(cases)
  end

  # Closes the server starts: the app's close (1000, after what it wrote before), and the idle
  # ping that is never answered (1001). The client's Close that answers ours is read and
  # dropped; TCP then ends.
  def test_server_initiated_closes_reach_the_client_with_their_code
    handler = Class.new do
      def on_message(client, data)
        client.write("last words")
        client.close if data == "close"
      end
    end.new
    start_server(->(env) { env["rack.upgrade"] = handler if env["rack.upgrade?"]; [101, {}, []] }, ws_ping: 0.2)
    ws = WSClient.open(@port)
    ws.text("close")
    assert_equal "last words", ws.read_frame.payload
    frame = ws.read_frame
    assert_equal [8, 1000], [frame.opcode, frame.close_code], "the app's close is a Close 1000"
    ws.close(1000)
    ws.text("ignored")
    assert_nil ws.read_frame, "nothing after the Close, then the end of TCP"

    quiet = WSClient.open(@port)
    assert_equal 9, quiet.read_frame.opcode, "an idle connection is pinged"
    frame = quiet.read_frame
    assert_equal [8, 1001], [frame.opcode, frame.close_code], "an unanswered ping closes with 1001"
    assert_nil quiet.read_frame
  ensure
    ws&.close_socket
    quiet&.close_socket
  end
end
