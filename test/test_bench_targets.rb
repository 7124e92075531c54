# frozen_string_literal: true

# bench/run's lines under each table: UP!'s default against the issues' reference rows.
require "minitest/autorun"
$LOAD_PATH.unshift(File.expand_path("../bench/lib", __dir__))
require "bench/runner"
require "bench/targets"
require "bench/wrk"

class TestBenchTargets < Minitest::Test
  def row(key, rps, non_2xx: 0, runtime: :peer)
    peer = Bench::Peer.new(key: key, name: key, runtime: runtime, mode: ->(_w) { "1 worker" }) { [] }
    requests = (rps * 5).round
    result = Bench::Wrk::Result.new(requests_per_sec: rps, requests: requests, p50: 0.1, p99: 1.0,
                                    socket_errors: {}, non_2xx_3xx: non_2xx)
    Bench::Runner::Row.new(peer: peer, app: "json_api", workers: 1, status: :ok, result: result,
                           runs: [result], errors: {}, notes: [])
  end

  def best_peer_line(rows)
    Bench::Targets.new("json_api", 1, rows).markdown.lines.find { |l| l.include?("Puma, Iodine") }
  end

  def test_the_best_peer_is_the_fastest_one
    line = best_peer_line([row("up_default", 24_000, runtime: :up), row("agoo", 30_000), row("puma", 12_000)])
    assert_match(/\A- 0\.80× the best of Puma, Iodine, Agoo, Falcon and Itsi — agoo 1 worker: /, line)
  end

  # itsi answers 503 to what waits beyond its backlog, fast: those do not make it faster.
  def test_a_peer_is_counted_by_its_successful_responses
    rows = [row("up_default", 24_000, runtime: :up), row("agoo", 30_000),
            row("itsi", 40_000, non_2xx: 100_000)] # half of its 200,000 responses
    line = best_peer_line(rows)
    assert_match(/\A- 0\.80× the best of .* — agoo 1 worker: /, line)
    rows[2] = row("itsi", 40_000, non_2xx: 20_000) # 36,000 successful a second
    assert_match(%r{— itsi 1 worker \(its 2xx/3xx responses only\): issue 13: ≥ 1\.3×, \*\*missed\*\*},
                 best_peer_line(rows))
    assert_match(/\A- 0\.67× /, best_peer_line(rows))
  end
end
