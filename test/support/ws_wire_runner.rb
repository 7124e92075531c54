# frozen_string_literal: true

require "rack"
require "socket"
require_relative "ws_client"
require_relative "ws_wire_case"

# Plays WSWireCases over real sockets against an in-process up_ruby serving the echo app of
# test/rackup/ws_echo.ru: each case in each of its modes, on a connection of its own, all on
# one server so that hundreds of cases take seconds. Every failure is collected and reported
# together, each with the case, the mode, what was sent and what came back, so one broken rule
# does not hide the others. Included by the test_websocket_protocol*.rb tests, next to
# UpTestHelpers.
module WSWireRunner
  ECHO_APP = File.expand_path("../rackup/ws_echo.ru", __dir__)

  # How long a read waits for the server. Every step of a passing case is answered at once;
  # this only bounds how long a failing one takes to fail.
  READ_TIMEOUT = 2

  # The echo app, loaded once (the file defines a class).
  def self.echo_app
    @echo_app ||= Rack::Builder.parse_file(ECHO_APP)
  end

  def start_echo_server(**options)
    start_server(WSWireRunner.echo_app, **options)
  end

  # Runs every case in every mode against the server on @port; fails once, listing every case
  # that failed. Returns how many runs there were.
  def run_wire_cases(cases)
    failures = []
    runs = 0
    cases.each do |c|
      c.modes.each do |mode|
        runs += 1
        play(c, mode)
      rescue UpTestTimeout::TestTookTooLong
        raise
      rescue Minitest::Assertion, StandardError => e
        failures << "#{c.id} #{c.name} [#{mode_name(mode)}]: #{e.message}\n    sent: #{c.describe}"
      end
    end
    assert_empty failures, "#{failures.size} of #{runs} runs failed:\n#{failures.join("\n")}"
    runs
  end

  private

  def mode_name(mode)
    mode.is_a?(Integer) ? "chops of #{mode}" : mode.to_s
  end

  # The connection a case is played on (the conformance suite's opens it over TLS when asked).
  def wire_client
    WSClient.open(@port, timeout: READ_TIMEOUT)
  end

  def play(c, mode)
    ws = wire_client
    ws.socket.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1)
    reader = FrameReader.new(ws)
    c.steps.each do |step|
      case step.kind
      when :write then write_step(ws, step.frames, mode)
      when :message then assert_message(reader.next_frame, step)
      when :maybe_message
        frame = reader.next_frame
        frame_matches?(frame, step) ? assert_message(frame, step) : reader.push_back(frame)
      when :pong then assert_message(reader.next_frame, step)
      when :close then assert_close_and_end(reader, step.payload)
      end
    end
    probe_and_close(ws, reader) unless c.ends_with_close?
  ensure
    ws&.close_socket
  end

  # Writes frames as the mode cuts them. A server that fails the connection may close before
  # everything is written: the writes stop there, and the steps after say whether that was right.
  def write_step(ws, frames, mode)
    pieces = case mode
             when :whole then [frames.join]
             when :frames then frames
             else
               bytes = frames.join
               (0...bytes.bytesize).step(mode).map { |i| bytes.byteslice(i, mode) }
             end
    pieces.each { |p| ws.socket.write(p) }
  rescue Errno::EPIPE, Errno::ECONNRESET
    nil
  end

  # A quiet open connection answers a ping with its pong and nothing else, then closes cleanly.
  def probe_and_close(ws, reader)
    ws.send_frame(:ping, "probe")
    assert_message(reader.next_frame, WSWireCase::Step.new(:pong, :pong, "probe".b))
    ws.close(1000)
    assert_close_and_end(reader, 1000)
  end

  def assert_close_and_end(reader, code)
    frame = reader.next_frame
    refute_nil frame, "expected a Close #{code.inspect}, the server ended the connection first"
    assert_equal [:close, code], [opcode_name(frame.opcode), frame.close_code],
                 "expected a Close #{code.inspect}, got #{show(frame)}"
    assert_empty frame.payload, "an empty Close expected" if code.nil?
    assert frame.payload.byteslice(2..).to_s.dup.force_encoding(Encoding::UTF_8).valid_encoding?,
           "the Close reason must be UTF-8 (RFC 6455 §5.5.1)"
    after = reader.next_frame_or_timeout
    assert_nil after, "the server must end TCP after its Close (RFC 6455 §7.1.1), " \
                      "#{after == :timeout ? "it did not within #{READ_TIMEOUT}s" : "it sent #{show(after)}"}"
  end

  def frame_matches?(frame, step)
    frame && opcode_name(frame.opcode) == step.opcode && frame.payload == step.payload
  end

  def assert_message(frame, step)
    what = "#{step.opcode} #{step.payload.byteslice(0, 40).inspect}#{step.payload.bytesize > 40 ? "...(#{step.payload.bytesize} bytes)" : ""}"
    refute_nil frame, "expected #{what}, the server ended the connection"
    assert frame_matches?(frame, step), "expected #{what}, got #{show(frame)}"
    assert frame.fin && !frame.rsv1, "expected one unfragmented frame without RSV bits, got #{show(frame)}"
  end

  def opcode_name(op)
    WSFrameBuilder::OPCODES.key(op) || op
  end

  def show(frame)
    return "the end of the connection" if frame.nil?

    detail = frame.opcode == 8 ? "code #{frame.close_code.inspect} reason #{frame.payload.byteslice(2..).inspect}" : frame.payload.byteslice(0, 40).inspect
    "#{opcode_name(frame.opcode)} (#{frame.payload.bytesize} bytes) #{detail}"
  end

  # The server's frames in order, with one frame of look-ahead for maybe_message.
  class FrameReader
    def initialize(ws)
      @ws = ws
      @held = []
    end

    # The next frame; nil at the end of the connection. Raises when none comes in time.
    def next_frame
      return @held.shift unless @held.empty?

      @ws.read_frame
    end

    # The same, or :timeout when the server neither sends nor closes in time.
    def next_frame_or_timeout
      next_frame
    rescue RuntimeError => e
      raise unless e.message.start_with?("no answer")

      :timeout
    end

    def push_back(frame)
      @held.unshift(frame)
    end
  end
end
