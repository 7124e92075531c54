# frozen_string_literal: true

# Mutated requests thrown at a real server over real sockets, the way a socket fuzzer does it:
# bytes flipped, inserted, dropped, duplicated and cut, sent in random pieces. Whatever arrives,
# the server must answer only with statuses that name a client error (or 200 from the app,
# when the mutation left a valid request), never a 5xx, never a malformed response; and it
# must go on serving. The seed is fixed so that a failure can be replayed; for a longer run:
#   UP_SOCKET_FUZZ_CASES=50000 UP_SOCKET_FUZZ_SEED=7 bundle exec ruby -Itest test/test_socket_fuzz.rb
require_relative "helper"

class TestSocketFuzz < Minitest::Test
  include UpTestHelpers

  SEEDS = [
    "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
    "GET /p?q=1&r=%20 HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\nCookie: a=1\r\n\r\n",
    "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world",
    "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n",
    "PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
    "GET http://[::1]:3000/x HTTP/1.1\r\nHost: [::1]:3000\r\n\r\n",
    "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
    "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
    "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /2 HTTP/1.0\r\n\r\n",
    "GET /1 HTTP/1.1\r\nHost: a\r\n\r\nGET /2 HTTP/1.1\r\nHost: a\r\n\r\n"
  ].freeze
  # What a mutation may add: bytes that matter to HTTP framing, and any byte at all.
  TOKENS = ["\r", "\n", "\r\n", " ", "\t", ":", ";", ",", "\0", "\x7f", "\xff", "0", "f", "-1",
            "chunked", "Content-Length: 5\r\n", "Transfer-Encoding: chunked\r\n", "Host: b\r\n",
            "HTTP/1.1", "/", "?", "#", "%", "[", "]"].map { |t| t.dup.force_encoding(Encoding::BINARY) }.freeze
  ALLOWED = [100, 200, 400, 408, 413, 431, 501, 505].freeze
  CASES = Integer(ENV.fetch("UP_SOCKET_FUZZ_CASES", 3000))
  SEED = Integer(ENV.fetch("UP_SOCKET_FUZZ_SEED", 20_261_123))

  def mutate(bytes, rng)
    bytes = bytes.b
    rng.rand(1..4).times do
      at = bytes.empty? ? 0 : rng.rand(bytes.bytesize)
      case rng.rand(6)
      when 0 then bytes.setbyte(at, rng.rand(256)) unless bytes.empty?
      when 1 then bytes.insert(at, TOKENS.sample(random: rng))
      when 2 then bytes.slice!(at, rng.rand(1..8))
      when 3 then bytes.insert(at, bytes.byteslice(at, rng.rand(1..40)).to_s)
      when 4 then bytes = bytes.byteslice(0, at)
      when 5 then bytes.insert(at, rng.bytes(rng.rand(1..6)))
      end
    end
    bytes
  end

  # Sends bytes in random pieces, half-closes (so the server sees the end instead of waiting
  # for its timeouts), and reads every response until the server closes.
  def exchange(bytes, rng)
    sock = connect
    until bytes.empty?
      piece = bytes.byteslice(0, rng.rand(1..bytes.bytesize))
      bytes = bytes.byteslice(piece.bytesize..)
      sock.write(piece)
    end
    sock.close_write
    statuses = []
    raise "no answer within 5 s" unless sock.wait_readable(5)

    while (res = read_response(sock))
      statuses << res.status
    end
    statuses
  rescue Errno::ECONNRESET, Errno::EPIPE
    statuses || []
  ensure
    sock&.close
  end

  def run_cases(threads)
    requests = 0
    app = lambda do |env|
      requests += 1
      env["rack.input"]&.read
      [200, { "content-length" => "0" }, []]
    end
    start_server(app, threads: threads, head_timeout: 2, body_timeout: 2)
    rng = Random.new(SEED + threads)
    seen = Hash.new(0)
    CASES.times do |i|
      input = mutate(SEEDS[i % SEEDS.size], rng)
      statuses = exchange(input.dup, rng)
      statuses.each { |s| seen[s] += 1 }
      bad = statuses - ALLOWED
      assert_empty bad, "threads #{threads}, case #{i}: #{bad.inspect} for #{input.inspect}"
    end
    # Still serving, and the app saw requests the mutations left valid.
    assert_equal 200, get("/after").status
    assert_operator requests, :>, CASES / 20, "statuses seen: #{seen}"
    assert_operator seen[400], :>, CASES / 4, "statuses seen: #{seen}"
    warn "socket fuzz, threads #{threads}: #{seen.sort.to_h}" if ENV["VERBOSE"]
  end

  def test_mutated_requests_inline
    run_cases(0)
  end

  def test_mutated_requests_with_app_threads
    run_cases(2)
  end
end
