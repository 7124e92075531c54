# frozen_string_literal: true

# WebSocket wire conformance on up_ruby, section 9 of the Autobahn TestSuite's case list
# (limits and performance), scaled down to a server started with a small max_msg (the
# --max-msg option) so that the whole file takes about a second: messages and frames up to the
# limit are echoed whole, however they are fragmented and however their bytes are cut; one byte
# more closes with 1009 (RFC 6455 §7.4.1), as soon as a frame header announces it, before its
# payload comes. Our own cases over real sockets (WSWireRunner); "up." cases are ours.
require_relative "helper"
require_relative "support/ws_wire_runner"

class TestWebSocketProtocolLimits < Minitest::Test
  include UpTestHelpers
  include WSWireRunner

  MAX = 256 * 1024
  SIZES = [MAX / 16, MAX / 4, MAX / 2, MAX].freeze
  FRAGMENT_SIZES = [64, 256, 1024, 4096, 16_384, 65_536, MAX].freeze
  CHOPS = [64, 128, 256, 512, 1024, 2048].freeze

  def payload(opcode, size)
    opcode == :text ? ("*" * size).b : Random.new(size).bytes(size)
  end

  def test_sections_9_1_to_9_6_messages_up_to_max_msg_are_echoed_however_cut
    start_echo_server(max_msg: MAX)
    cases = []
    %i[text binary].each_with_index do |op, k|
      SIZES.each_with_index do |size, i|
        data = payload(op, size)
        cases << WSWireCase.new("9.#{1 + k}.#{i + 1}", "#{op} of #{size} bytes in one frame") do
          write frame(op, data)
          expect_message op, data
        end
      end
      data = payload(op, MAX)
      FRAGMENT_SIZES.each_with_index do |size, i|
        cases << WSWireCase.new("9.#{3 + k}.#{i + 1}", "#{op} of #{MAX} bytes in fragments of #{size}", modes: [:whole, :frames]) do
          write fragments(op, data, size)
          expect_message op, data
        end
      end
      half = payload(op, MAX / 2)
      CHOPS.each_with_index do |chop, i|
        cases << WSWireCase.new("9.#{5 + k}.#{i + 1}", "#{op} of #{MAX / 2} bytes written in chops of #{chop}", modes: [chop]) do
          write frame(op, half)
          expect_message op, half
        end
      end
    end
    run_wire_cases(cases)
  end

  def test_sections_9_7_and_9_8_round_trips_one_after_another
    start_echo_server(max_msg: MAX)
    cases = %i[text binary].each_with_index.flat_map do |op, k|
      [0, 16, 64, 256, 1024, 4096].each_with_index.map do |size, i|
        data = payload(op, size)
        WSWireCase.new("9.#{7 + k}.#{i + 1}", "100 #{op} messages of #{size} bytes, each awaited", modes: [:whole]) do
          100.times do
            write frame(op, data)
            expect_message op, data
          end
        end
      end
    end
    run_wire_cases(cases)
  end

  def test_one_byte_over_max_msg_closes_with_1009_before_the_payload
    start_echo_server(max_msg: MAX)
    data = payload(:binary, MAX)
    run_wire_cases([
      WSWireCase.new("up.9.1", "a text frame announcing max + 1 bytes, none of them sent") do
        write text("", length: MAX + 1)
        expect_close 1009
      end,
      WSWireCase.new("up.9.2", "a binary frame of max + 1 bytes, all sent") do
        write binary(data + "x")
        expect_close 1009
      end,
      WSWireCase.new("up.9.3", "a first fragment of max bytes, then a continuation of one") do
        write binary(data, fin: false), ping("whole first fragment read")
        expect_pong "whole first fragment read"
        write continuation("x")
        expect_close 1009
      end,
      WSWireCase.new("up.9.4", "fragments of 16 KiB, the one past max announced but not sent") do
        write fragments(:binary, data, 16 * 1024, fin: false), ping("all fragments up to max read")
        expect_pong "all fragments up to max read"
        write continuation("", length: 1)
        expect_close 1009
      end,
      WSWireCase.new("up.9.5", "a 64-bit length of 2^62, none of it sent") do
        write binary("", length: 2**62)
        expect_close 1009
      end,
      WSWireCase.new("up.9.6", "the limit is per message: max, then max again") do
        write binary(data), text("*" * MAX)
        expect_message :binary, data
        expect_message :text, "*" * MAX
      end,
      WSWireCase.new("up.9.7", "empty fragments do not count, a ping of 125 bytes is no message", modes: [:whole, :frames]) do
        write binary(data, fin: false), *Array.new(100) { continuation("", fin: false) }, ping("p" * 125), continuation("")
        expect_pong "p" * 125
        expect_message :binary, data
      end
    ])
  end

  # More messages at once than the engine hands the app before it stops reading (1 MiB,
  # UP_WS_MAX_INBOUND in websocket.h): reading resumes as the app catches up, and every message
  # comes back, in order.
  def test_pipelined_messages_past_the_inbound_bound_are_all_echoed_in_order
    start_echo_server(max_msg: MAX)
    messages = Array.new(1500) { |i| "#{i}:".ljust(1024, "x") }
    run_wire_cases([
      WSWireCase.new("up.9.8", "1500 text messages of 1 KiB in one write", modes: [:whole, 65_536]) do
        write(*messages.map { |m| text(m) })
        messages.each { |m| expect_message :text, m }
      end
    ])
  end
end
