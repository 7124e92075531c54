# frozen_string_literal: true

# The WebSocket protocol on every runtime (RFC 6455), the rules that decide a close code: a
# case or two for each, from the Autobahn TestSuite's list (its ids; "up." cases are ours),
# played over real sockets by WSWireRunner against apps/ws_echo.ru, each whole, frame by frame
# and a byte at a time. up_ruby's own tests (test_websocket_protocol*.rb) play the rest of
# the list.
#
# §5.1 masking, §5.2 reserved bits and minimal lengths, §5.4 fragments, §5.5 control frames
# (1002); §8.1 UTF-8 (1007, as soon as the invalid byte arrives); §5.5.1 and §7.4 the Close
# and its codes (echoed, or 1002 for one that may not be sent, 1007 for a reason that is not
# UTF-8); §7.4.1 a message over --max-msg (1009); an unanswered ping (1001).
require_relative "helper"
require_relative "../support/ws_wire_runner"

class TestConformanceWebSocketProtocol < ConformanceTest
  include WSWireRunner

  serve "ws_echo.ru"

  def wire_client
    open_websocket(timeout: READ_TIMEOUT)
  end

  HELLO = "Hello, world!"
  BYTES = "\x00\xff\xfe\xfd\xfc\xfb\x00\xff".b
  KOSME = "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5".b # "κόσμε"
  INVALID = KOSME + "\xed\xa0\x80edited".b # a surrogate inside

  def test_messages_of_every_length_class_are_echoed
    cases = { 1 => 0, 2 => 125, 3 => 126, 6 => 65_535, 7 => 65_536 }.flat_map do |n, len|
      [WSWireCase.new("1.1.#{n}", "text of #{len} bytes") do
         write text("*" * len)
         expect_message :text, "*" * len
       end,
       WSWireCase.new("1.2.#{n}", "binary of #{len} bytes") do
         write binary("\xfe".b * len)
         expect_message :binary, "\xfe".b * len
       end]
    end
    run_wire_cases(cases)
  end

  def test_framing_errors_close_with_1002
    run_wire_cases([
      WSWireCase.new("up.1.1", "an unmasked frame (§5.1)") do
        write text(HELLO, masked: false)
        expect_close 1002
      end,
      WSWireCase.new("2.5", "a ping of 126 bytes") do
        write ping("\xfe".b * 126)
        expect_close 1002
      end,
      WSWireCase.new("3.1", "text with RSV = 1") do
        write text(HELLO, rsv: 1)
        expect_close 1002
      end,
      WSWireCase.new("3.6", "a ping with RSV = 6") do
        write ping(HELLO, rsv: 6)
        expect_close 1002
      end,
      WSWireCase.new("4.1.1", "the reserved data opcode 3") do
        write frame(3)
        expect_close 1002
      end,
      WSWireCase.new("4.2.1", "the reserved control opcode 11") do
        write frame(11)
        expect_close 1002
      end,
      WSWireCase.new("5.1", "a ping in two fragments") do
        write ping("fragment1", fin: false), continuation("fragment2")
        expect_close 1002
      end,
      WSWireCase.new("5.9", "a continuation with nothing to continue") do
        write continuation("non-continuation payload"), text(HELLO)
        expect_close 1002
      end,
      WSWireCase.new("5.18", "a text fragment followed by a text frame, not a continuation") do
        write text("fragment1", fin: false), text("fragment2")
        expect_close 1002
      end
    ])
  end

  # §5.2: "the minimal number of bytes MUST be used to encode the length".
  def test_lengths_not_in_their_minimal_form_close_with_1002
    run_wire_cases([
      WSWireCase.new("up.1.2", "a 16-bit length for 5 bytes") do
        write text("short", width: 16)
        expect_close 1002
      end,
      WSWireCase.new("up.1.3", "a 64-bit length for 200 bytes") do
        write binary("x" * 200, width: 64)
        expect_close 1002
      end
    ])
  end

  # §5.2: the most significant bit of a 64-bit length must be 0.
  def test_a_64_bit_length_with_its_top_bit_set_closes_with_1002
    run_wire_cases([
      WSWireCase.new("up.1.4", "a 64-bit length with its top bit set") do
        write binary("", length: 2**63 + 1)
        expect_close 1002
      end
    ])
  end

  def test_pings_fragments_and_pongs
    run_wire_cases([
      WSWireCase.new("2.2", "a ping is answered with its payload") do
        write ping(HELLO)
        expect_pong HELLO
      end,
      WSWireCase.new("2.9", "an unsolicited pong is ignored, the ping after it answered") do
        write pong("unsolicited"), ping("ping payload")
        expect_pong "ping payload"
      end,
      WSWireCase.new("5.6", "text in two fragments with a ping between") do
        write text("fragment1", fin: false), ping("ping payload"), continuation("fragment2")
        expect_pong "ping payload"
        expect_message :text, "fragment1fragment2"
      end,
      WSWireCase.new("up.5.2", "binary in fragments, a pong and a ping between") do
        write binary(BYTES, fin: false), pong("x"), continuation(BYTES, fin: false), ping("y"), continuation(BYTES)
        expect_pong "y"
        expect_message :binary, BYTES * 3
      end
    ])
  end

  def test_text_that_is_not_utf8_closes_with_1007
    run_wire_cases([
      WSWireCase.new("6.2.4", "valid UTF-8 in fragments of one byte, cut inside characters") do
        write fragments(:text, KOSME, 1)
        expect_message :text, KOSME
      end,
      WSWireCase.new("6.3.1", "a surrogate inside valid text, one frame") do
        write text(INVALID)
        expect_close 1007
      end,
      WSWireCase.new("6.3.2", "the same in fragments of one byte") do
        write fragments(:text, INVALID, 1)
        expect_close 1007
      end,
      WSWireCase.new("up.6.1", "a binary message is not UTF-8 checked") do
        write binary(INVALID)
        expect_message :binary, INVALID
      end,
      WSWireCase.new("up.6.3", "a text message that ends inside a character, its last fragment empty") do
        write text("\xce".b, fin: false), continuation("")
        expect_close 1007
      end
    ])
  end

  # §8.1 lets a server fail the connection as soon as the text is invalid; UP! does not wait
  # for the rest of the message.
  def test_invalid_utf8_fails_before_the_message_ends
    run_wire_cases([
      WSWireCase.new("6.4.1", "a fragment past U+10FFFF fails before the message ends") do
        write text(KOSME, fin: false), ping("first fragment read")
        expect_pong "first fragment read"
        write continuation("\xf4\x90\x80\x80", fin: false)
        expect_close 1007
      end
    ])
  end

  def test_the_close_handshake_and_its_codes
    cases = [
      WSWireCase.new("7.1.3", "a ping after the Close is not answered") do
        write close(1000), ping(HELLO)
        expect_close 1000
      end,
      WSWireCase.new("7.1.4", "a text after the Close is not echoed") do
        write close(1000), text(HELLO)
        expect_close 1000
      end,
      WSWireCase.new("7.3.1", "an empty Close is answered with an empty Close") do
        write close(nil)
        expect_close nil
      end,
      WSWireCase.new("7.3.2", "a Close payload of one byte") do
        write close(nil, "\x03")
        expect_close 1002
      end,
      WSWireCase.new("7.3.6", "a Close with a reason of 124 bytes (payload 126)") do
        write close(1000, "*" * 124)
        expect_close 1002
      end,
      WSWireCase.new("7.5.1", "a Close reason that is not UTF-8") do
        write close(1000, INVALID)
        expect_close 1007
      end
    ]
    [1000, 1001, 1011, 3000, 4999].each do |code|
      cases << WSWireCase.new("7.7", "the valid close code #{code} is echoed") do
        write close(code)
        expect_close code
      end
    end
    [0, 999, 1004, 1005, 1006, 1015, 5000].each do |code|
      cases << WSWireCase.new("7.9", "the close code #{code}, which may not be sent") do
        write close(code)
        expect_close 1002
      end
    end
    run_wire_cases(cases)
  end

  def test_a_message_over_max_msg_closes_with_1009
    start_own_server("ws_echo.ru", "--max-msg", "1024")
    run_wire_cases([
      WSWireCase.new("9.x", "a message of exactly --max-msg is echoed") do
        write text("*" * 1024)
        expect_message :text, "*" * 1024
      end,
      WSWireCase.new("9.x", "one byte more in one frame") do
        write binary("*" * 1025)
        expect_close 1009
      end,
      WSWireCase.new("9.x", "one byte more in fragments") do
        write text("*" * 1000, fin: false), continuation("*" * 25)
        expect_close 1009
      end
    ])
  end

  # An idle connection is pinged after --ws-ping, and closed with 1001 when the ping goes
  # unanswered as long again (the timers' grain is a second on every runtime).
  def test_an_unanswered_ping_closes_with_1001
    start_own_server("ws_echo.ru", "--ws-ping", "1")
    ws = open_websocket
    assert_equal 9, ws.read_frame.opcode, "an idle connection is pinged"
    frame = ws.read_frame
    assert_equal [8, 1001], [frame.opcode, frame.close_code], "an unanswered ping closes with 1001"
  ensure
    ws&.close_socket
  end
end
