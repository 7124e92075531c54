# frozen_string_literal: true

# WebSocket wire conformance on up_ruby, section 6 of the Autobahn TestSuite's case list: text
# messages must be UTF-8 (RFC 6455 §5.6, §8.1), checked across fragments, and a connection
# sending invalid UTF-8 is failed with 1007 (§7.4.1) as soon as the invalid byte arrives, not
# when the message ends (fail fast). Our own cases over real sockets (WSWireRunner), each
# whole, frame by frame and a byte at a time. The cases every runtime must pass are in
# test/conformance/test_websocket_protocol.rb (run on up_ruby too), not repeated here.
#
# The sample texts follow the categories of Markus Kuhn's UTF-8 decoder stress test, as
# Autobahn's 6.5 to 6.23 do; our sequences are built by utf8_form below. Whether each is valid,
# invalid, or a valid beginning cut inside a character is decided by Ruby's own transcoder
# (utf8_class), an oracle independent of the engine's validator, and checked against what the
# category says. UTF-8 is RFC 3629: no overlong forms, no surrogates (U+D800..U+DFFF), nothing
# past U+10FFFF; noncharacters such as U+FFFE are valid.
require "set"
require_relative "helper"
require_relative "support/ws_wire_runner"

class TestWebSocketProtocolUtf8 < Minitest::Test
  include UpTestHelpers
  include WSWireRunner

  KOSME = "\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5".b # "κόσμε"
  HELLO_UTF8 = "Hello-µ@ßöäüàá-UTF-8!!".b

  # cp in n bytes by the UTF-8 bit layout, whether or not n is its shortest form (overlong) and
  # whether or not RFC 3629 allows the result: n = 1..6.
  def self.utf8_form(cp, n)
    return [cp].pack("C") if n == 1

    lead = (0xff << (8 - n)) & 0xff | (cp >> (6 * (n - 1)))
    ([lead] + (n - 2).downto(0).map { |i| 0x80 | (cp >> (6 * i)) & 0x3f }).pack("C*")
  end

  def self.utf8(*cps)
    cps.map { |cp| [cp].pack("U").b }.join
  end

  # :valid, :incomplete (a valid beginning that ends inside a character) or :invalid.
  def self.utf8_class(bytes)
    return :valid if bytes.dup.force_encoding(Encoding::UTF_8).valid_encoding?

    converter = Encoding::Converter.new(Encoding::UTF_8, Encoding::UTF_16LE)
    result = converter.primitive_convert(bytes.dup.force_encoding(Encoding::UTF_8), +"", nil, nil, partial_input: true)
    result == :source_buffer_empty ? :incomplete : :invalid
  end

  MISSING_LAST = ["\xc0", "\xe0\x80", "\xf0\x80\x80", "\xf8\x80\x80\x80", "\xfc\x80\x80\x80\x80",
                  "\xdf", "\xef\xbf", "\xf7\xbf\xbf", "\xfb\xbf\xbf\xbf", "\xfd\xbf\xbf\xbf\xbf"].map(&:b).freeze
  SURROGATES = [0xd800, 0xdb7f, 0xdb80, 0xdbff, 0xdc00, 0xdf80, 0xdfff].freeze

  # [group, what, expected class (or :mixed), samples], in Autobahn's order of 6.5 to 6.23.
  GROUPS = [
    ["6.5", "valid samples", :valid, ["hello$world", "hello\u00a2world", "hello\u20acworld", "hello\u{24b62}world"].map(&:b) + [KOSME]],
    ["6.6", "every beginning of κόσμε", :mixed, (1..KOSME.bytesize).map { |i| KOSME.byteslice(0, i) }],
    ["6.7", "the first sequence of each length", :valid, [0, 0x80, 0x800, 0x10000].map { |cp| utf8(cp) }],
    ["6.8", "the first 5- and 6-byte forms", :invalid, [[0x200000, 5], [0x4000000, 6]].map { |cp, n| utf8_form(cp, n) }],
    ["6.9", "the last sequence of each length", :valid, [0x7f, 0x7ff, 0xffff, 0x10ffff].map { |cp| utf8(cp) }],
    ["6.10", "the last 4-, 5- and 6-byte forms", :invalid, [[0x1fffff, 4], [0x3ffffff, 5], [0x7fffffff, 6]].map { |cp, n| utf8_form(cp, n) }],
    ["6.11", "other boundaries", :mixed, [0xd7ff, 0xe000, 0xfffd, 0x10ffff].map { |cp| utf8(cp) } + [utf8_form(0x110000, 4)]],
    ["6.12", "unexpected continuation bytes", :invalid,
     ["\x80".b, "\xbf".b] + (2..6).map { |n| Array.new(n) { |i| i.even? ? 0x80 : 0xbf }.pack("C*") } + [(0x80..0xbf).to_a.pack("C*")]],
    ["6.13", "lonely start bytes, each followed by a space", :invalid,
     [0xc0..0xdf, 0xe0..0xef, 0xf0..0xf7, 0xf8..0xfb, 0xfc..0xfd].map { |r| r.map { |b| [b, 0x20].pack("CC") }.join }],
    ["6.14", "sequences with their last continuation byte missing", :mixed, MISSING_LAST],
    ["6.15", "those ten concatenated", :invalid, [MISSING_LAST.join]],
    ["6.16", "impossible bytes", :invalid, ["\xfe".b, "\xff".b, "\xfe\xfe\xff\xff".b]],
    ["6.17", "overlong forms of '/'", :invalid, (2..6).map { |n| utf8_form(0x2f, n) }],
    ["6.18", "the largest overlong form of each length", :invalid,
     [[0x7f, 2], [0x7ff, 3], [0xffff, 4], [0x1fffff, 5], [0x3ffffff, 6]].map { |cp, n| utf8_form(cp, n) }],
    ["6.19", "overlong forms of NUL", :invalid, (2..6).map { |n| utf8_form(0, n) }],
    ["6.20", "single UTF-16 surrogates", :invalid, SURROGATES.map { |cp| utf8_form(cp, 3) }],
    ["6.21", "paired UTF-16 surrogates", :invalid,
     [0xd800, 0xdb7f, 0xdb80, 0xdbff].product([0xdc00, 0xdfff]).map { |hi, lo| utf8_form(hi, 3) + utf8_form(lo, 3) }],
    ["6.22", "noncharacters", :valid, ([0xfffe, 0xffff] + (1..16).flat_map { |plane| [plane << 16 | 0xfffe, plane << 16 | 0xffff] }).map { |cp| utf8(cp) }],
    ["6.23", "specials and the byte order mark", :valid, (0xfff9..0xfffd).map { |cp| utf8(cp) } + [utf8(0xfeff), "\u00a0\ufeffx".b]]
  ].freeze

  def test_categories_agree_with_the_oracle
    GROUPS.each do |group, what, expected, samples|
      next if expected == :mixed

      samples.each_with_index do |s, i|
        assert_equal expected, self.class.utf8_class(s), "#{group}.#{i + 1} (#{what}): #{s.inspect}"
      end
    end
    assert_equal %i[valid incomplete invalid].to_set, GROUPS.flat_map { |g| g[3] }.map { |s| self.class.utf8_class(s) }.to_set
  end

  def test_sections_6_1_to_6_4_empty_fragmented_and_fail_fast
    start_echo_server
    invalid = KOSME + "\xf4\x90\x80\x80".b + "edited"
    surrogate = KOSME + "\xed\xa0\x80".b + "edited"
    # 6.2.4, 6.3.1, 6.3.2, 6.4.1, up.6.1 and up.6.3 are the conformance suite's.
    run_wire_cases([
      WSWireCase.new("6.1.1", "an empty text message") do
        write text("")
        expect_message :text, ""
      end,
      WSWireCase.new("6.1.2", "a text message of three empty fragments") do
        write text("", fin: false), continuation("", fin: false), continuation("")
        expect_message :text, ""
      end,
      WSWireCase.new("6.1.3", "empty, non-empty, empty fragments") do
        write text("", fin: false), continuation("middle frame payload", fin: false), continuation("")
        expect_message :text, "middle frame payload"
      end,
      WSWireCase.new("6.2.1", "valid UTF-8 in one frame") do
        write text(HELLO_UTF8)
        expect_message :text, HELLO_UTF8
      end,
      WSWireCase.new("6.2.2", "valid UTF-8 in two fragments cut between characters") do
        write text("Hello-\u00b5@\u00df\u00f6\u00e4".b, fin: false), continuation("\u00fc\u00e0\u00e1-UTF-8!!".b)
        expect_message :text, HELLO_UTF8
      end,
      WSWireCase.new("6.2.3", "valid UTF-8 in fragments of one byte, cut inside characters") do
        write text("", fin: false), *HELLO_UTF8.bytes.map { |b| continuation(b.chr, fin: false) }, continuation("")
        expect_message :text, HELLO_UTF8
      end,
      WSWireCase.new("6.4.2", "fail fast: a fragment of one byte that makes its predecessor's end invalid") do
        write text(invalid.byteslice(0, 12), fin: false), ping("first fragment read")
        expect_pong "first fragment read"
        write continuation(invalid.byteslice(12, 1), fin: false)
        expect_close 1007
      end,
      WSWireCase.new("6.4.3", "fail fast inside one frame: the rest of the payload is never sent") do
        bytes = text(invalid)
        head = bytes.bytesize - invalid.bytesize
        write bytes.byteslice(0, head + KOSME.bytesize)
        write bytes.byteslice(head + KOSME.bytesize, 4)
        expect_close 1007
      end,
      WSWireCase.new("6.4.4", "fail fast inside one frame, at the byte that makes it invalid") do
        bytes = text(invalid)
        head = bytes.bytesize - invalid.bytesize
        write bytes.byteslice(0, head + 12)
        write bytes.byteslice(head + 12, 1)
        expect_close 1007
      end,
      WSWireCase.new("up.6.2", "a ping's payload is not UTF-8 checked") do
        write ping(surrogate)
        expect_pong surrogate
      end
    ])
  end

  # 6.5 to 6.23: every sample as one text frame and as fragments of one byte (Autobahn sends
  # one frame; the fragments are our addition). A valid sample is echoed; an invalid one fails
  # with 1007, and still does when its frame leaves the message open (so the server cannot be
  # waiting for the message's end: fail fast); a sample that ends inside a character fails at
  # the message's end, and leaves an open message open.
  def test_sections_6_5_to_6_23_every_sample_in_every_cut
    start_echo_server
    cases = GROUPS.flat_map do |group, what, _expected, samples|
      samples.each_with_index.flat_map do |s, i|
        id = "#{group}.#{i + 1}"
        case self.class.utf8_class(s)
        when :valid then valid_cases(id, what, s)
        when :invalid then invalid_cases(id, what, s)
        else incomplete_cases(id, what, s)
        end
      end
    end
    runs = run_wire_cases(cases)
    assert_operator runs, :>=, 600
  end

  private

  def valid_cases(id, what, s)
    [WSWireCase.new(id, "#{what}: #{s.inspect} in one frame is echoed") do
       write text(s)
       expect_message :text, s
     end,
     WSWireCase.new(id, "#{what}: #{s.inspect} in fragments of one byte is echoed") do
       write fragments(:text, s, 1)
       expect_message :text, s
     end]
  end

  def invalid_cases(id, what, s)
    [WSWireCase.new(id, "#{what}: #{s.inspect} in one frame") do
       write text(s)
       expect_close 1007
     end,
     WSWireCase.new(id, "#{what}: #{s.inspect} as a first fragment, the message left open") do
       write text(s, fin: false)
       expect_close 1007
     end]
  end

  def incomplete_cases(id, what, s)
    [WSWireCase.new(id, "#{what}: #{s.inspect}, cut inside a character, as a whole message") do
       write text(s)
       expect_close 1007
     end,
     WSWireCase.new(id, "#{what}: #{s.inspect} in fragments of one byte, the message left open") do
       write fragments(:text, s, 1, fin: false)
     end]
  end
end
