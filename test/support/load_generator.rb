# frozen_string_literal: true

require "socket"

# A bounded load on 127.0.0.1 for the restart and supervision tests: a few threads send GET
# requests, half on keep-alive connections and half on a fresh connection each, until #stop or
# for at most max_seconds, and count what became of each attempt:
#
#   ok          a 200 with its whole body
#   refused     connect was refused (no one listening)
#   unanswered  the connection was closed or reset before the first byte of a response; the
#               attempt is retried once on a new connection, as a client may when the server
#               closed first (RFC 9112 §9.3.1): an idle keep-alive connection that a stopping
#               worker closes as the next request leaves is not a lost request
#   failed      any other status, a cut-off response, or no response within READ_TIMEOUT
#
# Each attempt carries its own id (GET /?id=...). The app under test (test/rackup/
# lifecycle.ru) writes the ids it is called with to a file, so #lost can tell an unanswered
# attempt the app never saw (never accepted: safe to retry) from one the app took and whose
# response never came (lost: a failed request).
class LoadGenerator
  READ_TIMEOUT = 10

  Result = Struct.new(:sent, :ok, :refused, :unanswered, :failed, :bodies, keyword_init: true) do
    def to_s
      "#{sent} sent, #{ok} ok, #{refused} refused, #{unanswered.size} unanswered (retried), " \
        "#{failed.size} failed#{failed.first(3).map { |f| " [#{f}]" }.join}"
    end
  end

  def initialize(port, keepalive: 2, fresh: 2, max_seconds: 30)
    @port = port
    @deadline = now + max_seconds
    @stop = false
    @lock = Mutex.new
    @result = Result.new(sent: 0, ok: 0, refused: 0, unanswered: [], failed: [], bodies: [])
    @threads = Array.new(keepalive) { |i| Thread.new { run(:keepalive, "k#{i}") } } +
               Array.new(fresh) { |i| Thread.new { run(:fresh, "f#{i}") } }
  end

  # Waits until n more requests have succeeded (so load is flowing), at most timeout seconds.
  def wait_for_ok(n, timeout: 20)
    target = ok + n
    limit = now + timeout
    until ok >= target
      raise "load: fewer than #{n} requests succeeded in #{timeout} s: #{@result}" if now > limit

      sleep 0.01
    end
  end

  def ok
    @lock.synchronize { @result.ok }
  end

  def stop
    @stop = true
    @threads.each { |t| t.join(READ_TIMEOUT + 5) || t.kill }
    @result
  end

  # Unanswered attempts whose id the app logged in ids_file ("id pid" lines): requests it took
  # and never answered. Returns [[id, pid], ...].
  def self.lost(result, ids_file)
    seen = File.exist?(ids_file) ? File.readlines(ids_file, chomp: true).to_h { |l| l.split(" ", 2) } : {}
    result.unanswered.filter_map { |id| [id, seen[id].to_i] if seen.key?(id) }
  end

  private

  def now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  def run(mode, name)
    sock = nil
    n = 0
    until @stop || now > @deadline
      n += 1
      sock, outcome = attempt(sock, "#{name}-#{n}", mode)
      next unless outcome == :unanswered

      sock&.close
      sock, = attempt(nil, "#{name}-#{n}-retry", mode)
    end
  ensure
    sock&.close
  end

  # One request; returns [the socket to reuse or nil, outcome].
  def attempt(sock, id, mode)
    sock ||= connect
    return [nil, :refused] unless sock

    count(:sent)
    sock.write("GET /?id=#{id} HTTP/1.1\r\nHost: 127.0.0.1\r\n#{"Connection: close\r\n" if mode == :fresh}\r\n")
    status, headers, body = read_response(sock)
    if status.nil?
      unanswered(id)
      sock.close
      return [nil, :unanswered]
    end
    if status == 200
      count(:ok, body)
    else
      failure(id, "status #{status}")
    end
    keep = mode == :keepalive && headers["connection"] != "close"
    sock.close unless keep
    [keep ? sock : nil, :done]
  rescue Errno::EPIPE, Errno::ECONNRESET, EOFError
    unanswered(id)
    sock&.close
    [nil, :unanswered]
  rescue IOError, SystemCallError, RuntimeError => e
    failure(id, e.message)
    sock&.close
    [nil, :failed]
  end

  def connect
    Socket.tcp("127.0.0.1", @port, connect_timeout: READ_TIMEOUT)
  rescue Errno::ECONNREFUSED
    count(:refused)
    sleep 0.005 # nothing listens: do not spin
    nil
  end

  # [status, headers, body], or nil status when the connection closed before a byte came.
  # Raises (a failed request) on a timeout or a response cut off after it began.
  def read_response(sock)
    buf = +""
    until (head_end = buf.index("\r\n\r\n"))
      chunk = read_some(sock)
      return nil if chunk.nil? && buf.empty?
      raise "response cut off in its head" if chunk.nil?

      buf << chunk
    end
    lines = buf[0, head_end].split("\r\n")
    status = lines.shift[/\AHTTP\/1\.1 (\d{3})/, 1].to_i
    headers = lines.to_h { |l| k, v = l.split(":", 2); [k.downcase, v.strip] }
    body = buf[(head_end + 4)..]
    length = Integer(headers.fetch("content-length"))
    while body.bytesize < length
      chunk = read_some(sock) or raise "response cut off in its body"
      body << chunk
    end
    [status, headers, body]
  end

  def read_some(sock)
    raise "no response in #{READ_TIMEOUT} s" unless sock.wait_readable(READ_TIMEOUT)

    sock.read_nonblock(16_384, exception: false).then { |r| r == :wait_readable ? "" : r }
  end

  def count(what, body = nil)
    @lock.synchronize do
      @result[what] += 1
      (@result.bodies << body) if body && @result.bodies.size < 100_000
    end
  end

  def unanswered(id)
    @lock.synchronize { @result.unanswered << id }
  end

  def failure(id, why)
    @lock.synchronize { @result.failed << "#{id}: #{why}" }
  end
end
