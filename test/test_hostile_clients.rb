# frozen_string_literal: true

# Hostile clients, every kind at once, against one worker started as a user starts it
# (exe/up_ruby -w 1, default threads and limits): slow heads (slowloris; RFC 9110 §15.5.9,
# 408), bodies declared at 1 GiB that trickle in, pipelining floods (RFC 9112 §9.3.2), clients
# that ask for a large body and never read it, and clients that keep writing into the
# lingering close after a 400 (RFC 9112 §9.6). Meanwhile a well-behaved client's requests all
# succeed, fast, and the worker's memory stays bounded: docs/architecture.md's "one client never holds
# the loop, whatever it sends" and "no number a client sends sizes an allocation past a fixed
# bound".
#
# The attackers run in child processes (test/support/hostile_clients.rb, one per kind), never
# in this one, whose only work during the attack is the well-behaved client and a look at the
# worker's /proc status between its requests: an attacker sharing this process's GVL would
# add its own delays to the latencies measured here. UP_HOSTILE_SECONDS sets how long the
# attack lasts (default 30); UP_LOAD_FIGURES=1 prints one line of figures.
require "json"
require_relative "helper"
require_relative "support/cli_process"

class TestHostileClients < Minitest::Test
  include UpTestHelpers

  SECONDS = Float(ENV.fetch("UP_HOSTILE_SECONDS", "30"))
  ATTACKERS = File.expand_path("support/hostile_clients.rb", __dir__)
  # How many connections of each kind (test/support/hostile_clients.rb says what each does).
  ATTACK = {
    "slow_heads" => 50,
    "trickled_bodies" => 20,
    "pipeline_floods" => 2,
    "never_readers" => 10,
    "linger_floods" => 2
  }.freeze

  # The well-behaved client: a request every INTERVAL, on one keep-alive connection, except
  # every FRESH_EVERY-th, which opens a connection of its own (so accepting is measured too).
  INTERVAL = 0.05
  FRESH_EVERY = 10
  REQUEST_TIMEOUT = 5
  P99_LIMIT = 0.050

  MIB = 1024 * 1024
  # Resident memory may grow by this much over the worker's own, warmed up, before the attack.
  # What the attack may legitimately cost is a few MiB: a 16 KiB read buffer for each of the
  # ~80 attacking connections, a KiB of body for each trickled one, 32 held responses for each
  # pipeliner, references (not copies) to the 4 MiB /big for the never-readers, and the Ruby
  # garbage of the pipeliners' thousands of requests a second. 100 MiB is generous for
  # that, yet far below what an unbounded buffer fills in 30 s: the lingering-close flooders
  # alone send gigabytes, the pipeliners tens of megabytes of requests, and a copy of /big per
  # never-reader would be 80 MiB.
  RSS_GROWTH_LIMIT = 100 * MIB
  # The address space (VmSize) may grow by less than one declared body. Untouched pages cost no
  # resident memory, so RSS does not see a buffer reserved from a Content-Length, but where
  # overcommit is off or a memory limit is set the reservation itself fails: 20 connections that
  # declared 1 GiB must not make the worker reserve 20 GiB. New app threads' stacks and
  # malloc arenas (64 MiB each, a few of them) fit well within this.
  VSZ_GROWTH_LIMIT = 1024 * MIB

  def time_limit_seconds
    SECONDS + 45
  end

  def teardown
    (@attackers || []).each { |a| stop_attacker(a) }
    @server&.stop
    super
  end

  def test_every_hostile_client_at_once_neither_slows_a_good_client_nor_grows_the_worker
    @server = CLIProcess.new("-w", "1", "-b", "127.0.0.1", "-p", "0", "test/rackup/hostile.ru")
    pid = @server.pid
    warm_up
    baseline = memory(pid)

    @attackers = ATTACK.map { |kind, count| start_attacker(kind, count) }
    @attackers.each { |a| wait_ready(a) }
    good = run_good_client(pid, SECONDS)
    attacks = @attackers.to_h { |a| [a[:kind], finish_attacker(a)] }

    assert alive?(pid), "the worker died during the attack; log:\n#{@server.output}"
    after = fetch(Socket.tcp("127.0.0.1", @server.port, connect_timeout: 5), "/after", close: true)
    summary = summarize(good, baseline, attacks)
    warn "load: hostile clients: #{summary}" if ENV["UP_LOAD_FIGURES"]

    assert_attacks_happened(attacks)
    assert_equal [200, "/after?"], after, "the worker does not answer after the attack"
    # The bounds are checked together, so that a failing run names every one it broke.
    latencies = good[:latencies].sort
    problems = []
    problems << "#{good[:failures].size} requests failed: #{good[:failures].first(3).join("; ")}" \
      unless good[:failures].empty?
    problems << "p99 #{ms(percentile(latencies, 99))} ms, over #{ms(P99_LIMIT)} ms" \
      if percentile(latencies, 99) >= P99_LIMIT
    rss_growth = good[:peak_rss] - baseline[:rss]
    problems << "RSS grew #{mib(rss_growth)} MiB, over #{mib(RSS_GROWTH_LIMIT)} MiB" if rss_growth >= RSS_GROWTH_LIMIT
    vsz_growth = good[:peak_vsz] - baseline[:vsz]
    problems << "address space grew #{mib(vsz_growth)} MiB, over #{mib(VSZ_GROWTH_LIMIT)} MiB" \
      if vsz_growth >= VSZ_GROWTH_LIMIT
    assert_empty problems, "under attack: #{summary}"
    assert_operator latencies.size, :>=, SECONDS / INTERVAL / 2, "the good client made too few requests"

    @server.signal(:TERM)
    assert @server.wait(timeout: 15).success?, "the worker did not stop cleanly on TERM:\n#{@server.output}"
    @server = nil
  end

  private

  # ---------------------------------------------------------------- the attackers

  def start_attacker(kind, count)
    stdin, child_stdin = IO.pipe
    out, child_out = IO.pipe
    pid = Process.spawn(RbConfig.ruby, ATTACKERS, kind, @server.port.to_s, count.to_s,
                        in: stdin, out: child_out)
    stdin.close
    child_out.close
    { kind: kind, pid: pid, stdin: child_stdin, out: out }
  end

  def wait_ready(attacker)
    line = attacker[:out].wait_readable(15) && attacker[:out].gets
    assert_equal "ready\n", line, "attacker #{attacker[:kind]} did not start"
  end

  # Tells the attacker to stop (its stdin closes), then reads what it reports.
  def finish_attacker(attacker)
    attacker[:stdin].close
    line = attacker[:out].wait_readable(15) && attacker[:out].gets
    _, status = Process.wait2(attacker[:pid])
    attacker[:pid] = nil
    assert status.success?, "attacker #{attacker[:kind]} failed: #{status.inspect}"
    JSON.parse(line.to_s)
  end

  def stop_attacker(attacker)
    attacker[:stdin].close unless attacker[:stdin].closed?
    attacker[:out].close unless attacker[:out].closed?
    return unless attacker[:pid]

    Process.kill(:KILL, attacker[:pid])
    Process.wait(attacker[:pid])
  rescue Errno::ESRCH, Errno::ECHILD
    nil
  end

  # Each kind of attack really happened, as the server should have met it.
  def assert_attacks_happened(attacks)
    # Slow heads are answered 408 once --head-timeout (10 s) has passed since they began, or
    # stay open until then; nothing else.
    slow = attacks["slow_heads"]
    assert_operator slow["bytes_trickled"], :>=, ATTACK["slow_heads"] * 4, "slow heads: #{slow}"
    assert_equal [], slow["statuses"].keys - ["408"], "slow heads: #{slow}"
    assert_operator slow["statuses"]["408"].to_i + slow["open_at_end"], :>=, ATTACK["slow_heads"], "slow heads: #{slow}"
    assert_operator slow["statuses"]["408"].to_i, :>=, ATTACK["slow_heads"], "slow heads: #{slow}" if SECONDS > 12

    # A byte a second comes well within --body-timeout (30 s): such a body may stay open, or
    # be given up with a 408, but is never taken to the app nor refused as too large.
    bodies = attacks["trickled_bodies"]
    assert_operator bodies["bytes_trickled"], :>=, ATTACK["trickled_bodies"] * (SECONDS - 2).floor, "trickled bodies: #{bodies}"
    assert_equal [], bodies["statuses"].keys - ["408"], "trickled bodies: #{bodies}"

    pipes = attacks["pipeline_floods"]
    assert_operator pipes["throttled"], :>, 0, "pipeliners were never made to wait: #{pipes}"
    assert_operator pipes["responses_200"], :>, 1000, "pipeliners: #{pipes}"
    assert_equal pipes["responses"], pipes["responses_200"], "pipeliners: #{pipes}"
    assert_operator pipes["requests_sent"], :>, pipes["responses"], "pipeliners: #{pipes}"

    never = attacks["never_readers"]
    total_unread = never["unread_bytes"] + never["unread_bytes_at_close"].to_i
    assert_operator total_unread, :>=, ATTACK["never_readers"] * 64 * 1024,
                    "never-readers: the server did not fill their socket buffers: #{never}"

    floods = attacks["linger_floods"]
    assert_operator floods["statuses"]["400"].to_i, :>=, ATTACK["linger_floods"], "lingering-close floods: #{floods}"
    assert_equal [], floods["statuses"].keys - ["400"], "lingering-close floods: #{floods}"
    assert_operator floods["bytes_flooded"], :>, 10 * MIB, "lingering-close floods: #{floods}"
  end

  # ---------------------------------------------------------------- the well-behaved client

  # Requests every INTERVAL for seconds. Returns latencies (s), failures, and the worker's
  # peak resident and virtual size (bytes), looked at between requests.
  def run_good_client(pid, seconds)
    result = { latencies: [], failures: [], peak_rss: 0, peak_vsz: 0 }
    sock = nil
    start = now
    n = 0
    while now - start < seconds
      n += 1
      fresh = (n % FRESH_EVERY).zero?
      if fresh
        sock&.close
        sock = nil
      end
      path = "/good/#{n}"
      t0 = now
      begin
        sock ||= Socket.tcp("127.0.0.1", @server.port, connect_timeout: REQUEST_TIMEOUT)
        status, body = fetch(sock, path, close: fresh, query: "n=#{n}")
        result[:latencies] << now - t0
        result[:failures] << "#{path}: #{status} #{body[0, 60].inspect}" unless status == 200 && body == "#{path}?n=#{n}"
      rescue IOError, SystemCallError, RuntimeError => e
        result[:failures] << "#{path}: #{e.class}: #{e.message}"
        sock&.close
        sock = nil
      end
      sock = nil if fresh
      sample_memory(pid, result)
      @server.read_available
      pause = start + (n * INTERVAL) - now
      sleep pause if pause.positive?
    end
    result
  ensure
    sock&.close
  end

  # Sends GET path on sock and reads the response within REQUEST_TIMEOUT. Returns [status,
  # body]; closes sock when close is set (it asked for Connection: close).
  def fetch(sock, path, close:, query: nil)
    target = query ? "#{path}?#{query}" : path
    sock.write("GET #{target} HTTP/1.1\r\nHost: 127.0.0.1\r\n#{"Connection: close\r\n" if close}\r\n")
    deadline = now + REQUEST_TIMEOUT
    buf = +"".b
    loop do
      if (head_end = buf.index("\r\n\r\n"))
        length = buf[0, head_end][/^content-length: *(\d+)/i, 1] or raise "no content-length: #{buf[0, 200].inspect}"
        body_at = head_end + 4
        if buf.bytesize >= body_at + length.to_i
          return [buf[%r{\AHTTP/1\.1 (\d{3})}, 1].to_i, buf.byteslice(body_at, length.to_i)]
        end
      end
      left = deadline - now
      raise "no whole response within #{REQUEST_TIMEOUT} s" if left <= 0 || !sock.wait_readable(left)

      chunk = sock.read_nonblock(65_536, exception: false)
      raise "connection closed after #{buf.bytesize} bytes" if chunk.nil?

      buf << chunk unless chunk == :wait_readable
    end
  ensure
    sock.close if close
  end

  # A few requests before measuring, so that the baseline is a worker that has served.
  def warm_up
    sock = Socket.tcp("127.0.0.1", @server.port, connect_timeout: 5)
    50.times { |i| assert_equal [200, "/warm?i=#{i}"], fetch(sock, "/warm", close: false, query: "i=#{i}") }
    status, body = fetch(sock, "/big", close: true)
    assert_equal [200, 4 * MIB], [status, body.bytesize]
  end

  # ---------------------------------------------------------------- figures

  def memory(pid)
    status = File.read("/proc/#{pid}/status")
    { rss: status[/^VmRSS:\s+(\d+) kB/, 1].to_i * 1024, vsz: status[/^VmSize:\s+(\d+) kB/, 1].to_i * 1024 }
  end

  def sample_memory(pid, result)
    m = memory(pid)
    result[:peak_rss] = [result[:peak_rss], m[:rss]].max
    result[:peak_vsz] = [result[:peak_vsz], m[:vsz]].max
  end

  def summarize(good, baseline, attacks)
    lat = good[:latencies].sort
    reconnects = attacks.map { |kind, a| "#{kind} #{a["reconnects"].to_i}#{statuses(a)}" }.join(", ")
    "#{lat.size} requests in #{SECONDS.round} s, #{good[:failures].size} failed, latency p50 " \
      "#{ms(percentile(lat, 50))} ms, p99 #{ms(percentile(lat, 99))} ms, max #{ms(lat.last.to_f)} ms, " \
      "#{lat.count { |l| l >= P99_LIMIT }} at #{ms(P99_LIMIT)} ms or more; " \
      "RSS #{mib(baseline[:rss])} -> peak #{mib(good[:peak_rss])} MiB, address space " \
      "#{mib(baseline[:vsz])} -> peak #{mib(good[:peak_vsz])} MiB; attacker reconnects: #{reconnects}; " \
      "pipeliners throttled #{attacks.dig("pipeline_floods", "throttled")} times, " \
      "#{attacks.dig("pipeline_floods", "responses")} responses; " \
      "#{mib(attacks.dig("linger_floods", "bytes_flooded").to_i)} MiB flooded into lingering closes " \
      "(at most #{mib(attacks.dig("linger_floods", "max_bytes_flooded_per_connection").to_i)} MiB on one); " \
      "attackers' CPU #{attacks.map { |kind, a| "#{kind} #{a["cpu_seconds"]} s" }.join(", ")}"
  end

  def statuses(attack)
    return "" if attack["statuses"].empty?

    " (#{attack["statuses"].map { |s, n| "#{n}x #{s}" }.join(", ")})"
  end

  # Nearest rank: the smallest latency at or above p percent of them.
  def percentile(sorted, p)
    return Float::INFINITY if sorted.empty?

    sorted[((p / 100.0) * sorted.size).ceil - 1]
  end

  def ms(seconds)
    (seconds * 1000).round(1)
  end

  def mib(bytes)
    (bytes.to_f / MIB).round(1)
  end

  def now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  def alive?(pid)
    Process.wait2(pid, Process::WNOHANG).nil?
  end
end
