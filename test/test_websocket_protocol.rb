# frozen_string_literal: true

# WebSocket wire conformance on up_ruby, sections 1 to 5 of the Autobahn TestSuite's case list
# (framing, pings and pongs, reserved bits, reserved opcodes, fragmentation), written as our
# own cases and played over real sockets by WSWireRunner against test/rackup/ws_echo.ru: each
# case whole, frame by frame and a byte at a time. The ids are Autobahn's; "up." cases are
# rules of RFC 6455 that Autobahn does not test. Every failure names the exact close code.
# The cases every runtime must pass are in test/conformance/test_websocket_protocol.rb, which
# runs on up_ruby too: each case is in one file only, and this one holds the rest of the list.
#
# RFC 6455 §5.1 (clients mask; a server closes on an unmasked frame), §5.2 (RSV bits without a
# negotiated extension fail the connection; the length in its minimal form), §5.4
# (fragmentation, control frames between fragments), §5.5 (control frames: at most 125 bytes,
# never fragmented), §5.5.2-3 (a ping is answered by a pong with its payload, an unsolicited
# pong is ignored), §7.1.7 and §7.4.1 (failing the connection: 1002 for a protocol error).
# Sections 6, 7 and 9 are test_websocket_protocol_utf8.rb, _close.rb and _limits.rb.
require_relative "helper"
require_relative "support/ws_wire_runner"

class TestWebSocketProtocol < Minitest::Test
  include UpTestHelpers
  include WSWireRunner

  HELLO = "Hello, world!"
  BYTES = "\x00\xff\xfe\xfd\xfc\xfb\x00\xff".b

  def test_section_1_text_and_binary_of_every_length_class_are_echoed
    start_echo_server
    # 0, 125, 126, 65,535 and 65,536 bytes (1.1.1-3, 1.1.6-8 and 1.2.x) are the conformance
    # suite's; 127 and 128 are the lengths on either side of the first 16-bit one.
    cases = { 4 => 127, 5 => 128 }.flat_map do |n, len|
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

  def test_strict_framing_beyond_autobahn
    start_echo_server
    run_wire_cases([
      WSWireCase.new("up.1.5", "a ping with a 16-bit length (§5.5: control frames have a 7-bit one)") do
        write ping("p", width: 16)
        expect_close 1002
      end,
      WSWireCase.new("up.1.6", "a masked frame after an unmasked one is not reached") do
        write text(HELLO, masked: false), text(HELLO)
        expect_close 1002
      end,
      WSWireCase.new("up.1.7", "a valid frame, then an unmasked one") do
        write text(HELLO)
        expect_message :text, HELLO
        write binary(BYTES, masked: false)
        expect_close 1002
      end,
      WSWireCase.new("up.1.8", "a 14-byte header (64-bit length, mask) a byte per write, then its payload", modes: [:whole]) do
        bytes = binary("\xfe".b * 65_536)
        bytes.byteslice(0, 14).each_char { |b| write b }
        write bytes.byteslice(14..)
        expect_message :binary, "\xfe".b * 65_536
      end
    ])
  end

  def test_section_2_pings_are_answered_and_pongs_ignored
    start_echo_server
    pings = Array.new(10) { |i| "payload-#{i}" }
    run_wire_cases([
      WSWireCase.new("2.1", "a ping without payload") do
        write ping
        expect_pong ""
      end,
      WSWireCase.new("2.3", "a ping with a binary payload") do
        write ping(BYTES)
        expect_pong BYTES
      end,
      WSWireCase.new("2.4", "a ping of 125 bytes (2.6: the same a byte at a time)") do
        write ping("\xfe".b * 125)
        expect_pong "\xfe".b * 125
      end,
      WSWireCase.new("2.7", "an unsolicited pong without payload") do
        write pong
      end,
      WSWireCase.new("2.8", "an unsolicited pong with payload") do
        write pong("unsolicited pong payload")
      end,
      WSWireCase.new("2.10", "10 pings, 10 pongs in order (2.11: a byte at a time)") do
        write(*pings.map { |p| ping(p) })
        pings.each { |p| expect_pong p }
      end
    ])
  end

  def test_section_3_reserved_bits_fail_with_1002
    start_echo_server
    run_wire_cases([
      WSWireCase.new("3.2", "text, then text with RSV = 2, then a ping: no pong") do
        write text(HELLO), text(HELLO, rsv: 2), ping
        maybe_message :text, HELLO
        expect_close 1002
      end,
      WSWireCase.new("3.3", "text echoed, then text with RSV = 3, then a ping") do
        write text(HELLO)
        expect_message :text, HELLO
        write text(HELLO, rsv: 3), ping
        expect_close 1002
      end,
      WSWireCase.new("3.4", "text, then text with RSV = 4 (RSV1, no extension), then a ping") do
        write text(HELLO), text(HELLO, rsv: 4), ping
        maybe_message :text, HELLO
        expect_close 1002
      end,
      WSWireCase.new("3.5", "binary with RSV = 5") do
        write binary(BYTES, rsv: 5)
        expect_close 1002
      end,
      WSWireCase.new("3.7", "a close with RSV = 7") do
        write close(1000, "", rsv: 7)
        expect_close 1002
      end
    ])
  end

  def test_section_4_reserved_opcodes_fail_with_1002
    start_echo_server
    # 4.1.1 and 4.2.1 (opcodes 3 and 11 alone) are the conformance suite's.
    cases = [[1, 3..7], [2, 11..15]].flat_map do |group, opcodes|
      opcodes.each_with_index.drop(1).map do |op, i|
        payload = i.odd? ? "reserved opcode payload" : ""
        kind = op < 8 ? "data" : "control"
        if i < 2
          WSWireCase.new("4.#{group}.#{i + 1}", "reserved #{kind} opcode #{op}#{payload.empty? ? "" : " with payload"}") do
            write frame(op, payload)
            expect_close 1002
          end
        else
          WSWireCase.new("4.#{group}.#{i + 1}", "text, reserved #{kind} opcode #{op}, then a ping: no pong") do
            write text(HELLO), frame(op, payload), ping
            maybe_message :text, HELLO
            expect_close 1002
          end
        end
      end
    end
    run_wire_cases(cases)
  end

  def test_section_5_fragments_are_joined_and_misordered_ones_fail_with_1002
    start_echo_server
    fragments = %w[fragment1 fragment2 fragment3 fragment4 fragment5]
    run_wire_cases([
      WSWireCase.new("5.2", "a pong in two fragments") do
        write pong("fragment1", fin: false), continuation("fragment2")
        expect_close 1002
      end,
      WSWireCase.new("5.3", "text in two fragments (5.4, 5.5: a byte and a frame at a time)") do
        write text("fragment1", fin: false), continuation("fragment2")
        expect_message :text, "fragment1fragment2"
      end,
      WSWireCase.new("5.8", "the ping between two fragments answered before the second is sent") do
        write text("fragment1", fin: false), ping("ping payload")
        expect_pong "ping payload"
        write continuation("fragment2")
        expect_message :text, "fragment1fragment2"
      end,
      WSWireCase.new("5.12", "a continuation with FIN clear and nothing to continue (5.13, 5.14)") do
        write continuation("non-continuation payload", fin: false), text(HELLO)
        expect_close 1002
      end,
      WSWireCase.new("5.15", "a whole fragmented message, then a continuation of nothing") do
        write text(fragments[0], fin: false), continuation(fragments[1]),
              continuation(fragments[2], fin: false), text(fragments[3])
        maybe_message :text, fragments[0] + fragments[1]
        expect_close 1002
      end,
      WSWireCase.new("5.16", "twice: a continuation of nothing (FIN clear), then a fragmented text") do
        write(*Array.new(2) { [continuation(fragments[0], fin: false), text(fragments[1], fin: false), continuation(fragments[2])] })
        expect_close 1002
      end,
      WSWireCase.new("5.17", "twice: a continuation of nothing (FIN set), then a fragmented text") do
        write(*Array.new(2) { [continuation(fragments[0]), text(fragments[1], fin: false), continuation(fragments[2])] })
        expect_close 1002
      end,
      WSWireCase.new("up.5.1", "a binary fragment followed by a text frame") do
        write binary(BYTES, fin: false), text(HELLO)
        expect_close 1002
      end,
      WSWireCase.new("5.19", "text in five fragments, pings after the 2nd and 4th, each answered first (5.20)") do
        write text(fragments[0], fin: false), continuation(fragments[1], fin: false), ping("pongme 1!")
        expect_pong "pongme 1!"
        write continuation(fragments[2], fin: false), continuation(fragments[3], fin: false), ping("pongme 2!")
        expect_pong "pongme 2!"
        write continuation(fragments[4])
        expect_message :text, fragments.join
      end
    ])
  end
end
