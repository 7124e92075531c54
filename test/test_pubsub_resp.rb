# frozen_string_literal: true

# Up::PubSub::RESP, the RESP2 reply parser of the Redis pub/sub engine, as a table: each input
# is parsed whole and then fed a byte at a time, and both must give the same replies and end
# the same way (:done, :partial with bytes kept for later, or :error). About half the cases are
# rejections or input that stops inside a reply.
require_relative "helper"
require "up/pub_sub/resp"

class TestPubSubRESP < Minitest::Test
  RESP = Up::PubSub::RESP
  ERR = RESP::ErrorReply

  def time_limit_seconds
    10
  end

  CASES = [
    # accepted
    ["simple string", "+OK\r\n", ["OK"], :done],
    ["simple string with any byte but CR and LF", "+a\x00\xff b\r\n", ["a\x00\xff b"], :done],
    ["error reply is a value, not a raise", "-ERR unknown command 'x'\r\n", [ERR.new("ERR unknown command 'x'")], :done],
    ["integers", ":0\r\n:-12\r\n:42\r\n", [0, -12, 42], :done],
    ["largest and smallest 64-bit integers", ":9223372036854775807\r\n:-9223372036854775808\r\n",
     [9_223_372_036_854_775_807, -9_223_372_036_854_775_808], :done],
    ["bulk string", "$5\r\nhello\r\n", ["hello"], :done],
    ["empty bulk string", "$0\r\n\r\n", [""], :done],
    ["null bulk string", "$-1\r\n", [nil], :done],
    ["bulk string holding CRLF, NUL and high bytes", "$6\r\n\r\n\x00\xff\r\n\r\n", ["\r\n\x00\xff\r\n"], :done],
    ["message push", "*3\r\n$7\r\nmessage\r\n$4\r\nroom\r\n$2\r\nhi\r\n", [%w[message room hi]], :done],
    ["pmessage push", "*4\r\n$8\r\npmessage\r\n$2\r\nr*\r\n$4\r\nroom\r\n$0\r\n\r\n",
     [["pmessage", "r*", "room", ""]], :done],
    ["subscribe confirmation", "*3\r\n$9\r\nsubscribe\r\n$4\r\nroom\r\n:1\r\n", [["subscribe", "room", 1]], :done],
    ["empty and null arrays", "*0\r\n*-1\r\n", [[], nil], :done],
    ["nested arrays", "*3\r\n*1\r\n:1\r\n*0\r\n$-1\r\n", [[[1], [], nil]], :done],
    ["pipelined replies", "+OK\r\n:1\r\n$1\r\nx\r\n*1\r\n+PONG\r\n", ["OK", 1, "x", ["PONG"]], :done],
    # partial
    ["simple string without its LF", "+OK\r", [], :partial],
    ["integer without its end", ":12", [], :partial],
    ["bulk header only", "$5\r\n", [], :partial],
    ["bulk string cut short", "$5\r\nhel", [], :partial],
    ["bulk string without its LF", "$5\r\nhello\r", [], :partial],
    ["array with one of three elements", "*3\r\n$7\r\nmessage\r\n", [], :partial],
    ["array inside an array cut short", "*2\r\n*2\r\n:1\r\n", [], :partial],
    ["a reply, then a partial one", "+OK\r\n$3\r\nab", ["OK"], :partial],
    ["bare CR inside a partial line is not judged yet", "+O\rK", [], :partial],
    # rejected
    ["unknown type byte", "!oops\r\n", [], :error],
    ["RESP3 map", "%1\r\n+a\r\n+b\r\n", [], :error],
    ["RESP3 null", "_\r\n", [], :error],
    ["RESP3 push", ">3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nb\r\n", [], :error],
    ["RESP3 double", ",1.5\r\n", [], :error],
    ["empty line", "\r\n", [], :error],
    ["bare LF", "+OK\n", [], :error],
    ["bare LF alone", "\n", [], :error],
    ["bare CR inside a line", "+O\rK\r\n", [], :error],
    ["integer that is not a number", ":abc\r\n", [], :error],
    ["integer without digits", ":\r\n", [], :error],
    ["integer with a plus sign", ":+1\r\n", [], :error],
    ["integer with a leading zero", ":01\r\n", [], :error],
    ["integer with a space", ":1 \r\n", [], :error],
    ["integer above 64 bits", ":9223372036854775808\r\n", [], :error],
    ["bulk length -2", "$-2\r\n", [], :error],
    ["bulk length with a leading zero", "$01\r\nx\r\n", [], :error],
    ["bulk length missing", "$\r\n", [], :error],
    ["bulk length with a plus sign", "$+1\r\nx\r\n", [], :error],
    ["bulk string followed by other bytes than CRLF", "$3\r\nabcXY", [], :error],
    ["bulk string followed by LF CR", "$3\r\nabc\n\r", [], :error],
    ["bulk string longer than Redis allows", "$#{RESP::MAX_BULK + 1}\r\n", [], :error],
    ["array length -2", "*-2\r\n", [], :error],
    ["array with too many elements", "*#{RESP::MAX_ELEMENTS + 1}\r\n", [], :error],
    ["arrays nested too deep", "*1\r\n" * (RESP::MAX_DEPTH + 1), [], :error],
    ["line longer than the limit", "+#{"a" * RESP::MAX_LINE}", [], :error],
    ["a good reply, then garbage", "+OK\r\n?\r\n", ["OK"], :error],
    ["garbage inside an array", "*2\r\n:1\r\n!\r\n", [], :error]
  ].freeze

  CASES.each_with_index do |(name, input, replies, ending), i|
    define_method("test_#{format("%02d", i)}_#{name.gsub(/\W+/, "_")}") do
      input = input.b
      whole = parse([input])
      assert_equal [replies.map { |r| binary(r) }, ending], whole, "#{name}, whole"
      by_byte = parse(input.each_char.to_a)
      assert_equal whole, by_byte, "#{name}, a byte at a time"
    end
  end

  def test_every_call_after_an_error_raises_again
    parser = RESP.new.feed("+OK\r\n?\r\n+OK\r\n")
    assert_equal "OK", parser.next_reply
    first = assert_raises(RESP::ProtocolError) { parser.next_reply }
    second = assert_raises(RESP::ProtocolError) { parser.next_reply }
    assert_equal first.message, second.message
  end

  def test_replies_are_binary_strings_whatever_was_fed
    parser = RESP.new.feed("$2\r\n".encode("UTF-8")).feed("é\r\n".encode("UTF-8"))
    reply = parser.next_reply
    assert_equal Encoding::BINARY, reply.encoding
    assert_equal "é".b, reply
  end

  # A large bulk string in pieces, each piece followed by a reply attempt: it arrives whole,
  # and so does the reply after it.
  def test_a_large_bulk_string_arrives_in_pieces
    payload = Random.new(7).bytes(300_000)
    input = "$#{payload.bytesize}\r\n".b + payload + "\r\n:7\r\n".b
    parser = RESP.new
    replies = []
    input.bytes.each_slice(4093) do |piece|
      parser.feed(piece.pack("C*"))
      while (reply = parser.next_reply) != RESP::INCOMPLETE
        replies << reply
      end
    end
    assert_equal [payload, 7], replies
    refute parser.mid_reply?
  end

  def test_command_encodes_bulk_strings_of_any_bytes_and_integers
    assert_equal "*3\r\n$7\r\nPUBLISH\r\n$4\r\nr\r\n\x00\r\n$2\r\n\xC3\xA9\r\n".b, RESP.command("PUBLISH", "r\r\n\x00", "é")
    assert_equal "*2\r\n$4\r\nPING\r\n$2\r\n12\r\n".b, RESP.command("PING", 12)
    assert_equal "*1\r\n$0\r\n\r\n".b, RESP.command("")
    round_trip = RESP.new.feed(RESP.command("a", "\xff".b, "")).next_reply
    assert_equal ["a", "\xff".b, ""], round_trip
  end

  private

  # Feeds the pieces in order, taking every complete reply after each; returns the replies and
  # how it ended.
  def parse(pieces)
    parser = RESP.new
    replies = []
    pieces.each do |piece|
      parser.feed(piece)
      while (reply = parser.next_reply) != RESP::INCOMPLETE
        replies << reply
      end
    end
    [replies, parser.mid_reply? ? :partial : :done]
  rescue RESP::ProtocolError
    [replies, :error]
  end

  def binary(reply)
    case reply
    when String then reply.b
    when Array then reply.map { |r| binary(r) }
    else reply
    end
  end
end
