# frozen_string_literal: true

require "json"
require "socket"
require "io/wait"

# The attackers of test/test_hostile_clients.rb, one kind per process, so that their Ruby work
# never shares a GVL with the client whose latency the test measures. Run as
#
#   ruby test/support/hostile_clients.rb KIND PORT COUNT
#
# it opens COUNT connections to 127.0.0.1:PORT that misbehave the KIND way (one method below
# each), prints "ready" once they are open, and keeps at it until its stdin closes (the test's
# signal to stop; MAX_SECONDS is a backstop), then closes every socket and prints one line of
# JSON: what it did and what the server answered. When the server closes one of its
# connections (that is the server defending itself) it opens another and counts a reconnect.
#
# Every kind paces itself (a byte per tick, a bounded read per tick, a pause before
# reconnecting) or is paced by the server's back-pressure, so the attackers' CPU stays modest
# on a small shared machine: they test what the server does with hostile input, not which
# process gets the CPU.
class HostileClients
  KINDS = %w[slow_heads trickled_bodies pipeline_floods never_readers linger_floods].freeze
  MAX_SECONDS = 120
  HOST = "127.0.0.1"

  # At up_ruby's default --max-body-size, so it is accepted, and never completed.
  DECLARED_BODY = 1024 * 1024 * 1024
  PIPELINED = "GET /pipelined HTTP/1.1\r\nHost: h\r\n\r\n"
  PIPELINE_BATCH = (PIPELINED * 1024).freeze
  # What a pipeliner reads per tick: the server may answer only as fast as it is read.
  PIPELINE_READ = 16_384
  # Refused, then the connection closes with a lingering close (RFC 9112 §9.6): the server
  # shuts down its sending side and reads and drops what comes until the client closes.
  MALFORMED = "GET / HTTP/1.1\r\nHost: h\r\nX-No-Colon here\r\n\r\n"
  FLOOD = ("x" * 65_536).b.freeze
  # How long a flooder waits before it reconnects after the server closed it: while
  # connected it writes as fast as it can, but a server that cuts it short quickly must not
  # turn it into a connect loop that takes a core.
  FLOOD_RECONNECT_PAUSE = 0.05
  TCP_CLOSE = 7
  TCP_CLOSE_WAIT = 8

  # A connection and what came back on it. at: when it next acts; sent: bytes written.
  Conn = Struct.new(:sock, :rx, :at, :sent, :state)

  def initialize(kind, port, count)
    raise ArgumentError, "unknown kind #{kind}; one of #{KINDS.join(", ")}" unless KINDS.include?(kind)

    @kind = kind
    @port = port
    @count = count
    @stats = Hash.new(0)
    @statuses = Hash.new(0)
    @stop = false
    @deadline = now + MAX_SECONDS
    Thread.new do
      $stdin.read
    ensure
      @stop = true
    end
  end

  def run
    $stdout.sync = true
    conns = []
    send(@kind, conns)
  ensure
    @stats["open_at_end"] = conns.count { |c| !c.sock.closed? }
    @stats["cpu_seconds"] = Process.times.then { |t| (t.utime + t.stime).round(2) }
    conns.each { |c| c.sock.close unless c.sock.closed? }
    puts JSON.generate(@stats.merge("statuses" => @statuses))
  end

  private

  # Many connections each sending a request head a byte at a time, never ending it (slowloris).
  # The server answers 408 when --head-timeout has passed since the head began.
  def slow_heads(conns)
    opener = -> { open_conn { |c| write(c, "GET /slow HTTP/1.1\r\nHost: h\r\nX-Slow: ") } }
    @count.times { conns << opener.call }
    every(0.25) do
      conns.map! do |c|
        next reopen(c, &opener) unless take_input(c)
        next c unless c.rx.empty? # answered: the close follows

        write(c, "a") ? (@stats["bytes_trickled"] += 1) : (next reopen(c, &opener))
        c
      end
    end
  end

  # Bodies declared at 1 GiB, of which a KiB comes at once and then a byte a second: less than
  # --body-timeout apart, so they may stay open for ever, and a server that sizes a buffer
  # from Content-Length reserves 1 GiB for each.
  def trickled_bodies(conns)
    head = "POST /upload HTTP/1.1\r\nHost: h\r\nContent-Type: application/octet-stream\r\n" \
           "Content-Length: #{DECLARED_BODY}\r\n\r\n"
    opener = lambda do
      open_conn do |c|
        write(c, head + ("x" * 1024))
        c.at = now + rand
      end
    end
    @count.times { conns << opener.call }
    every(0.25) do
      conns.map! do |c|
        next reopen(c, &opener) unless take_input(c)
        next c if now < c.at || !c.rx.empty?

        c.at += 1
        write(c, "x") ? (@stats["bytes_trickled"] += 1) : (next reopen(c, &opener))
        c
      end
    end
  end

  # Requests written as fast as the server takes them, without waiting for responses; a slow
  # read each tick lets the server go on, as fast as its output is taken. "throttled" counts
  # the ticks on which the server stopped taking requests (the write would block).
  def pipeline_floods(conns)
    opener = -> { open_conn { |c| c.state = +"" } } # state: the part of a batch not yet written
    @count.times { conns << opener.call }
    every(0.05) do
      conns.map! do |c|
        flood_pipeline(c) && read_responses(c) ? c : reopen(c, &opener)
      end
    end
    @stats["requests_sent"] = @stats["bytes_sent"] / PIPELINED.bytesize
  end

  # Writes pipelined requests until the server stops taking them (at most 32 writes a tick).
  # Returns false when the server closed the connection.
  def flood_pipeline(conn)
    32.times do
      conn.state = PIPELINE_BATCH.dup if conn.state.empty?
      n = conn.sock.write_nonblock(conn.state, exception: false)
      if n == :wait_writable
        @stats["throttled"] += 1
        break
      end
      @stats["bytes_sent"] += n
      conn.state = conn.state.byteslice(n..)
    end
    true
  rescue Errno::EPIPE, Errno::ECONNRESET, IOError
    false
  end

  # Reads at most PIPELINE_READ bytes and counts the responses that begin in them. Returns
  # false when the server closed the connection.
  def read_responses(conn)
    chunk = conn.sock.read_nonblock(PIPELINE_READ, exception: false)
    return false if chunk.nil?
    return true if chunk == :wait_readable

    # A status line is counted once its "HTTP/1.1 NNN " (13 bytes) is in. conn.rx holds the
    # last 12 bytes read before, where one may have begun, and never a whole one.
    text = conn.rx + chunk
    @stats["responses"] += text.scan(%r{HTTP/1\.1 \d{3} }).size
    @stats["responses_200"] += text.scan("HTTP/1.1 200 ").size
    conn.rx = text.byteslice(-12..) || text
    true
  rescue Errno::ECONNRESET, IOError
    false
  end

  # Each asks for the 4 MiB /big twice on one connection and never reads a byte. The server
  # closes them once --write-timeout passes without progress.
  def never_readers(conns)
    opener = -> { open_conn { |c| write(c, "GET /big HTTP/1.1\r\nHost: h\r\n\r\n" * 2) } }
    @count.times { conns << opener.call }
    every(0.5) do
      conns.map! do |c|
        next c unless [TCP_CLOSE, TCP_CLOSE_WAIT].include?(tcp_state(c.sock))

        @stats["unread_bytes_at_close"] += unread(c.sock)
        c.sock.close
        @stats["reconnects"] += 1
        opener.call
      end
    end
    @stats["unread_bytes"] = conns.sum { |c| unread(c.sock) }
  end

  # Each sends a malformed request, reads its 400 to the end of stream (the server has shut
  # down its sending side), then writes as fast as it can into the lingering close until the
  # server closes the connection; then, after a short pause, again.
  def linger_floods(conns)
    opener = lambda do
      open_conn do |c|
        c.state = :answer
        write(c, MALFORMED)
      end
    end
    @count.times { conns << opener.call }
    ready
    until @stop || now > @deadline
      waiting = conns.select { |c| c.state == :answer }
      flooding = conns.select { |c| c.state == :flood }
      readable, writable = IO.select(waiting.map(&:sock), flooding.map(&:sock), nil, 0.05)
      conns.map! do |c|
        if c.state == :answer && readable&.include?(c.sock)
          c.state = :flood unless take_input(c) # end of stream: answered, and lingering
          c
        elsif c.state == :flood && writable&.include?(c.sock)
          flood(c) ? c : linger_closed(c, opener)
        else
          c
        end
      end
    end
  end

  # Writes up to 1 MiB into conn. Returns false when the server closed the connection.
  def flood(conn)
    16.times do
      n = conn.sock.write_nonblock(FLOOD, exception: false)
      break if n == :wait_writable

      conn.sent += n
      @stats["bytes_flooded"] += n
    end
    true
  rescue Errno::EPIPE, Errno::ECONNRESET, IOError
    false
  end

  def linger_closed(conn, opener)
    @stats["max_bytes_flooded_per_connection"] = [@stats["max_bytes_flooded_per_connection"], conn.sent].max
    sleep FLOOD_RECONNECT_PAUSE
    reopen(conn, &opener)
  end

  # ---------------------------------------------------------------- plumbing

  def now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  def ready
    return if @ready

    @ready = true
    puts "ready"
  end

  # Says ready, then runs the block every seconds until told to stop.
  def every(seconds)
    ready
    until @stop || now > @deadline
      yield
      sleep seconds
    end
  end

  # A new connection, set up by the block.
  def open_conn
    conn = Conn.new(Socket.tcp(HOST, @port, connect_timeout: 5), +"".b, now, 0, nil)
    @stats["connections"] += 1
    yield conn
    conn
  end

  # The server closed conn: counts the status it answered (if it did), then opens another
  # with the block.
  def reopen(conn, &opener)
    @statuses[conn.rx[%r{\AHTTP/1\.1 (\d{3})}, 1] || "none"] += 1
    conn.sock.close
    @stats["reconnects"] += 1
    opener.call
  end

  # Reads what is waiting into conn.rx. Returns false at the end of stream or a reset.
  def take_input(conn)
    loop do
      chunk = conn.sock.read_nonblock(65_536, exception: false)
      return false if chunk.nil?
      return true if chunk == :wait_readable

      conn.rx << chunk
    end
  rescue Errno::ECONNRESET, IOError
    false
  end

  # Writes bytes without waiting (they are few). Returns false when the server closed.
  def write(conn, bytes)
    n = conn.sock.write_nonblock(bytes, exception: false)
    conn.sent += n unless n == :wait_writable
    true
  rescue Errno::EPIPE, Errno::ECONNRESET, IOError
    false
  end

  def tcp_state(sock)
    sock.getsockopt(Socket::IPPROTO_TCP, Socket::TCP_INFO).data.unpack1("C")
  end

  def unread(sock)
    sock.nread
  rescue IOError, SystemCallError
    0
  end
end

HostileClients.new(ARGV[0], Integer(ARGV[1]), Integer(ARGV[2])).run if $PROGRAM_NAME == __FILE__
