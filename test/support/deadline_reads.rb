# frozen_string_literal: true

# Reads with a deadline, for tests that expect bytes by a certain time (a streamed part before
# the app makes the next one, a response while another client stalls). A server that holds
# the bytes back makes such a test fail with a message saying what was missing, instead of
# hanging until the per-test timeout. Included next to HTTPClient, whose read_response it uses.
module DeadlineReads
  # Raised inside read_response_within; not a Timeout::Error, so it is never mistaken for the
  # per-test timeout (UpTestTimeout::TestTookTooLong) or the other way round.
  class NoAnswer < StandardError; end

  def monotonic_now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # One response from sock within seconds; fails the test, naming what, when none comes.
  def read_response_within(sock, seconds, what, head: false)
    Timeout.timeout(seconds, NoAnswer) { read_response(sock, head: head) }
  rescue NoAnswer
    flunk "#{what}: no complete response within #{seconds} s"
  end

  # Appends what sock delivers to buffer until buffer includes needle. Returns true when it
  # does, false when seconds pass first or the server closes the connection.
  def read_until(sock, buffer, needle, seconds)
    deadline = monotonic_now + seconds
    until buffer.include?(needle)
      left = deadline - monotonic_now
      return false if left <= 0 || !sock.wait_readable(left)

      chunk = sock.read_nonblock(65_536, exception: false)
      return false if chunk.nil?

      buffer << chunk unless chunk == :wait_readable
    end
    true
  rescue Errno::ECONNRESET
    false
  end

  # Appends what sock delivers to buffer until the server closes the connection (end of stream
  # or a reset). Returns true then, false when seconds pass first.
  def read_until_eof(sock, buffer, seconds)
    deadline = monotonic_now + seconds
    loop do
      left = deadline - monotonic_now
      return false if left <= 0 || !sock.wait_readable(left)

      chunk = sock.read_nonblock(65_536, exception: false)
      return true if chunk.nil?

      buffer << chunk unless chunk == :wait_readable
    end
  rescue Errno::ECONNRESET
    true
  end

  # Splits raw response bytes into [head, body], the body decoded from chunked framing
  # (RFC 9112 §7.1). Raises ArgumentError, saying where, when the framing does not parse or
  # bytes follow the last chunk.
  def split_chunked_response(raw)
    head, rest = raw.b.split("\r\n\r\n", 2)
    raise ArgumentError, "no end of head in #{raw[0, 200].inspect}" if rest.nil?

    body = "".b
    pos = 0
    loop do
      eol = rest.index("\r\n", pos) or raise ArgumentError, "no chunk-size line at offset #{pos}"
      line = rest[pos...eol]
      raise ArgumentError, "bad chunk-size line #{line[0, 40].inspect} at offset #{pos}" unless line.match?(/\A\h+\z/)

      size = line.to_i(16)
      pos = eol + 2
      if size.zero?
        raise ArgumentError, "bytes after the last chunk: #{rest[pos, 40].inspect}" unless rest[pos..] == "\r\n"

        return [head, body]
      end
      raise ArgumentError, "chunk of #{size} bytes at offset #{pos} runs past the data" if pos + size + 2 > rest.bytesize
      raise ArgumentError, "no CRLF after the chunk at offset #{pos}" unless rest[pos + size, 2] == "\r\n"

      body << rest[pos, size]
      pos += size + 2
    end
  end
end
