# frozen_string_literal: true

require_relative "ws_frame_builder"

# One wire conformance case, written from a case of the Autobahn TestSuite's list (its number
# is the id) or of our own: frames to write and what the server must answer, step by step. A
# case is data; WSWireRunner plays it against a server that echoes every message.
#
#   WSWireCase.new("5.6", "a ping between two fragments is answered first") do
#     write text("frag", fin: false), ping("p"), continuation("ment")
#     expect_pong "p"
#     expect_message :text, "fragment"
#   end
#
# A case that does not end with expect_close must leave the connection open and quiet: the
# runner then checks that a ping is answered by its pong and nothing else (so a frame the server
# should not have sent shows), and that a Close 1000 is answered with 1000 and the end of TCP.
#
# Every case runs in several modes, one connection each: :whole (each write step in one
# write), :frames (one write per frame) and chops of n bytes (byte-at-a-time for small cases),
# with Nagle off, so that the server's reader is tested at frame and byte boundaries too.
class WSWireCase
  Step = Struct.new(:kind, :opcode, :payload, :frames)

  # Cases whose writes add up to more than this run in chops of CHOP_LARGE bytes instead of
  # one byte at a time.
  BYTEWISE_MAX = 8 * 1024
  CHOP_LARGE = 997

  attr_reader :id, :name, :steps

  def initialize(id, name, modes: nil, &block)
    @id = id
    @name = name
    @steps = []
    @modes = modes
    instance_exec(&block)
  end

  def modes
    @modes || [:whole, :frames, bytes_written <= BYTEWISE_MAX ? 1 : CHOP_LARGE]
  end

  def bytes_written
    @steps.select { |s| s.kind == :write }.sum { |s| s.frames.sum(&:bytesize) }
  end

  def ends_with_close?
    @steps.last&.kind == :close
  end

  # The steps, for a failure message: each write's frames read back (WSFrameBuilder.describe),
  # at most SHOWN frames per write and SHOWN steps in all.
  SHOWN = 8

  def describe
    shown = @steps.first(SHOWN).map do |s|
      case s.kind
      when :write then "write [#{abridge(s.frames.first(SHOWN).map { |f| WSFrameBuilder.describe(f) }, s.frames.size).join(" | ")}]"
      when :close then "expect close #{s.payload.inspect}"
      else "#{s.kind == :maybe_message ? "maybe" : "expect"} #{s.opcode} #{s.payload.byteslice(0, 32).inspect}"
      end
    end
    abridge(shown, @steps.size).join("; ")
  end

  # ---- steps

  def write(*frames)
    @steps << Step.new(:write, nil, nil, frames.flatten)
  end

  # The next frame is this message, whole in one frame (the server never fragments).
  def expect_message(opcode, payload)
    @steps << Step.new(:message, opcode, payload.b)
  end

  # The next frame may be this message: an echo that a failure of the connection right after
  # may overtake (the app writes it from its thread; the loop queues the Close when it reads the
  # bad frame, RFC 6455 §7.1.7). When it comes, it comes whole and before the Close.
  def maybe_message(opcode, payload)
    @steps << Step.new(:maybe_message, opcode, payload.b)
  end

  def expect_pong(payload)
    @steps << Step.new(:pong, :pong, payload.b)
  end

  # The next frame is a Close with this code (nil: an empty Close), and then the server ends
  # the TCP connection with nothing after it.
  def expect_close(code)
    @steps << Step.new(:close, :close, code)
  end

  # ---- frames

  def frame(opcode, payload = "", **options)
    WSFrameBuilder.frame(opcode, payload, **options)
  end

  %i[text binary continuation ping pong].each do |op|
    define_method(op) { |payload = "", **options| frame(op, payload, **options) }
  end

  # A message as fragments of size bytes (the last may be shorter): opcode on the first frame,
  # continuations after it, FIN on the last one only, and only when fin.
  def fragments(opcode, payload, size, fin: true)
    payload = payload.b
    count = [(payload.bytesize + size - 1) / size, 1].max
    Array.new(count) do |i|
      frame(i.zero? ? opcode : :continuation, payload.byteslice(i * size, size) || "", fin: fin && i == count - 1)
    end
  end

  # A Close frame: with a code (and a reason), or empty when code is nil.
  def close(code = 1000, reason = "", **options)
    frame(:close, code ? WSFrameBuilder.close_payload(code, reason) : reason, **options)
  end

  private

  def abridge(shown, total)
    total > shown.size ? shown + ["... #{total - shown.size} more"] : shown
  end
end
