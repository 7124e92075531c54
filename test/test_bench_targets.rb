# frozen_string_literal: true

# bench/run's lines under each table: UP!'s default against its reference rows and targets.
require "minitest/autorun"
$LOAD_PATH.unshift(File.expand_path("../bench/lib", __dir__))
require "bench/runner"
require "bench/targets"
require "bench/wrk"
require "bench/ws_load"
require "bench/ws_table"

class TestBenchTargets < Minitest::Test
  def row(key, rps, non_2xx: 0, runtime: :peer, group: key)
    peer = Bench::Peer.new(key: key, name: key, group: group, runtime: runtime, mode: ->(_w) { "1 worker" }) { [] }
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
    assert_match(%r{— itsi 1 worker \(its 2xx/3xx responses only\): target ≥ 1\.3×, \*\*missed\*\*},
                 best_peer_line(rows))
    assert_match(/\A- 0\.67× /, best_peer_line(rows))
  end

  def up(key, rps)
    row(key, rps, runtime: :up, group: "up")
  end

  def lines(app, workers, rows, shape: "t1c32")
    Bench::Targets.new(app, workers, rows, shape: shape).markdown.lines.grep(/\A- /).map(&:chomp)
  end

  def test_json_api_with_two_workers_needs_1_3_times_the_best_rack_peer
    rows = [up("up_default", 39_000), row("agoo", 30_000)]
    assert_includes lines("json_api", 2, rows),
                    "- 1.30× the best of Puma, Iodine, Agoo, Falcon and Itsi — agoo 1 worker: target ≥ 1.3×, met"
  end

  # json_const is held against nginx answering the same document, not against H2O.
  def test_json_const_is_held_against_nginx_not_h2o
    rows = [up("up_default", 89_000), row("nginx", 100_000, runtime: :native), row("h2o", 20_000, runtime: :native)]
    out = lines("json_const", 1, rows)
    assert_includes out, "- 0.89× nginx — nginx 1 worker: target ≥ 0.9×, **missed**"
    assert(out.none? { |l| l.include?("h2o") || l.include?("H2O") }, out.join("\n"))
    assert_includes lines("json_const", 2, rows), "- 0.89× nginx — nginx 1 worker: no target for json_const.ru with 2 workers"
  end

  # A 1 KB and a 1 MB file against nginx's sendfile and the Ruby servers that serve
  # files themselves; the 100 KB file, the range and the 304 have ratios without a target.
  def test_static_files_are_held_against_nginx_and_the_ruby_servers
    rows = [up("up_default", 50_000), row("nginx_static", 52_000, runtime: :native, group: "nginx"),
            row("agoo", 30_000), row("iodine", 40_000), row("itsi", 20_000)]
    out = lines("static_1k", 1, rows)
    assert_includes out, "- 0.96× nginx serving the files — nginx_static 1 worker: target ≥ 0.9×, met"
    assert_includes out, "- 1.25× the best of Agoo, Iodine and Itsi serving the files — iodine 1 worker: " \
                         "target ≥ 1.5×, **missed**"
    rows[4] = row("itsi", 45_000)
    assert_includes lines("static_1m", 1, rows), "- 1.11× the best of Agoo, Iodine and Itsi serving the files — " \
                                                 "itsi 1 worker: target ≥ 1.5×, **missed**"
    %w[static_100k static_range static_304].each do |app|
      assert_includes lines(app, 1, rows),
                      "- 0.96× nginx serving the files — nginx_static 1 worker: no target for #{app}.ru with 1 worker"
    end
  end

  # A Rails page's assets at 10 × what Rails serves through ActionDispatch::Static
  # under Puma; the rails page keeps its 1.3× Puma.
  def test_rails_assets_are_held_against_puma_at_ten_times
    rows = [up("up_default", 95_000), row("puma", 10_000, group: "puma"), row("puma_thread", 9_000, group: "puma")]
    %w[rails_css rails_js].each do |app|
      assert_equal ["- 9.50× Puma — puma 1 worker: target ≥ 10×, **missed**"], lines(app, 1, rows).grep(/Puma —/)
    end
    assert_equal ["- 9.50× Puma — puma 1 worker: target ≥ 1.3×, met"], lines("rails", 1, rows).grep(/Puma —/)
  end

  # hello.ru with 1 worker is held at 0.95× nginx, the limit.
  def test_hello_with_one_worker_needs_095_of_nginx
    out = lines("hello", 1, [up("up_default", 92_000), row("nginx", 100_000, runtime: :native)])
    assert_equal ["- 0.92× nginx — nginx 1 worker: target ≥ 0.95×, **missed**"], out.grep(/nginx/)
  end

  # Each line gives UP!'s CPU per request against the reference's, when both were read.
  def test_a_line_gives_the_cpu_per_request_against_the_reference
    ours = up("up_default", 92_000)
    nginx = row("nginx", 100_000, runtime: :native)
    ours.cpu.add(0.92, 40_000) # 23 µs a request
    nginx.cpu.add(0.8, 40_000) # 20 µs
    assert_equal ["- 0.92× nginx — nginx 1 worker: target ≥ 0.95×, **missed**; CPU/req 1.15× its (23.0 against 20.0 µs)"],
                 lines("hello", 1, [ours, nginx]).grep(/nginx/)
  end

  def test_hello_with_two_workers_under_t2c64_has_the_heavy_load_targets
    rows = [up("up_default", 90_000), up("up_thread", 80_000), row("nginx", 100_000, runtime: :native),
            row("iodine", 69_000)]
    heavy = lines("hello", 2, rows, shape: "t2c64")
    assert_includes heavy, "- 0.90× nginx — nginx 1 worker: target ≥ 0.9×, met"
    assert_includes heavy, "- 1.30× the best of Puma, Iodine, Agoo, Falcon and Itsi — iodine 1 worker: target ≥ 1.3×, met"
    # The default shape's were set under -t1 -c32: for information only here.
    assert_includes heavy, "- 1.12× the fastest other UP! mode — up_thread 1 worker: " \
                           "no target for hello.ru with 2 workers under `--load t2c64`"
    default = lines("hello", 2, rows)
    assert_includes default, "- 0.90× nginx — nginx 1 worker: target ≥ 0.9×, met"
    assert_includes default, "- 1.30× the best of Puma, Iodine, Agoo, Falcon and Itsi — iodine 1 worker: target ≥ 1.3×, met"
  end

  # "No lower than before", with 5% allowed for the noise of shared machines.
  def test_the_default_row_is_held_against_the_baseline_commit
    %w[hello env_to_s rails].each do |app|
      [1, 2].each do |workers|
        met = lines(app, workers, [up("up_default", 96_000), up("up_baseline", 100_000)])
        assert_includes met, "- 0.96× UP! at the --baseline commit — up_baseline 1 worker: " \
                             "target ≥ 0.95× (no lower than before, 5% allowed for noise), met"
        missed = lines(app, workers, [up("up_default", 94_000), up("up_baseline", 100_000)])
        assert(missed.any? { |l| l.start_with?("- 0.94× UP! at the --baseline commit") && l.end_with?("**missed**") })
      end
    end
  end

  def test_the_baseline_is_not_one_of_the_current_modes
    out = lines("hello", 1, [up("up_default", 90_000), up("up_baseline", 120_000), up("up_thread", 80_000)])
    assert_includes out, "- 1.12× the fastest other UP! mode — up_thread 1 worker: target ≥ 0.95×, met"
  end

  def test_a_missing_baseline_says_how_to_get_it
    assert_includes lines("env_to_s", 2, [up("up_default", 90_000)]),
                    "- UP! at the --baseline commit: not in this table " \
                    "(target ≥ 0.95× (no lower than before, 5% allowed for noise); run with --baseline REV)"
    assert(lines("json_api", 1, [up("up_default", 90_000)]).none? { |l| l.include?("baseline") })
    assert(lines("hello", 2, [up("up_default", 90_000)], shape: "t2c64").none? { |l| l.include?("baseline") })
  end

  # The WebSocket targets: ratios of UP!'s figure to Iodine's, and idle RSS growth.
  def ws_row(key, app, per_s, p99: 1_000.0, runtime: :peer, rss: nil, errors: {})
    peer = Bench::Peer.new(key: key, name: key, runtime: runtime, mode: ->(_w) { "1 worker" }) { [] }
    mode = Bench::Apps.fetch(app).ws
    kinds = { "connect" => 0, "handshake" => 0, "closed" => 0, "protocol" => 0, "mismatch" => 0, "timeout" => 0 }
    result = Bench::WsLoad::Result.new(mode: mode, requests_per_sec: per_s, requests: (per_s * 5).round, p50: 500.0,
                                       p99: p99, kinds: kinds, lost: 0, duplicates: 0, out_of_order: 0, window: 8,
                                       client_cpu: 1.0, client_wall: 5.0, opened: 10_000, still_open: 10_000,
                                       sample: 100, sample_echoed: 100, first_error: "")
    row = Bench::Runner::Row.new(peer: peer, app: app, workers: 1, status: :ok, result: result, runs: [result],
                                 errors: errors, notes: [])
    row.rss_idle, held = rss if rss
    row.rss_held << held if rss
    row
  end

  def ws_lines(app, rows)
    Bench::WsTargets.new(app, rows).markdown.lines.grep(/\A- /).map(&:chomp)
  end

  def test_ws_echo_needs_one_and_a_half_times_iodine
    rows = [ws_row("up_default", "ws_echo", 150_000, runtime: :up), ws_row("iodine", "ws_echo", 101_000)]
    assert_equal ["- 1.49× iodine 1 worker, round trips/s: target ≥ 1.5×, **missed**"], ws_lines("ws_echo", rows)
    rows[1] = ws_row("iodine", "ws_echo", 100_000)
    assert_equal ["- 1.50× iodine 1 worker, round trips/s: target ≥ 1.5×, met"], ws_lines("ws_echo", rows)
  end

  def test_ws_broadcast_needs_twice_iodine_and_says_the_p99
    rows = [ws_row("up_default", "ws_broadcast", 400_000, p99: 2_500.0, runtime: :up),
            ws_row("iodine", "ws_broadcast", 190_000, p99: 66_600.0)]
    assert_equal ["- 2.11× iodine 1 worker, deliveries/s: target ≥ 2.0×, met; p99 from publish to receipt " \
                  "2.50 ms (Iodine's 66.6 ms)"], ws_lines("ws_broadcast", rows)
  end

  def test_ws_idle_allows_10_mb_for_10000_connections
    up = ws_row("up_default", "ws_idle", 10_000, runtime: :up, rss: [300 * 1024, 310 * 1024])
    assert_equal ["- +10.0 MB of RSS for 10,000 idle connections: target ≤ 10 MB for 10,000, met"],
                 ws_lines("ws_idle", [up])
    up.rss_held << (311 * 1024) # the highest hold counts
    assert_match(/\+11\.0 MB .*\*\*missed\*\*/, ws_lines("ws_idle", [up]).first)
  end

  def test_a_ws_table_without_iodine_or_up_says_so
    rows = [ws_row("up_default", "ws_echo", 150_000, runtime: :up)]
    assert_equal ["- Iodine: not in this table (target ≥ 1.5×; run with --only up,iodine)"], ws_lines("ws_echo", rows)
    failed = ws_row("up_default", "ws_echo", 0, runtime: :up)
    failed.status = :failed
    failed.reason = "failed: no WebSocket echo"
    assert_match(/not measured \(failed: no WebSocket echo\)/, Bench::WsTargets.new("ws_echo", [failed]).markdown)
  end

  # The client's CPU beside the server's, so a reader sees whether it could have limited a row.
  def test_a_ws_table_shows_the_clients_cpu_beside_the_servers
    row = ws_row("iodine", "ws_broadcast", 190_000, errors: { "lost" => 3 })
    row.cpu.add(2.0, 1_000_000)
    row.client_cpu.add(1.0, 1_000_000)
    row.client_busy.add(1.0, 5.0)
    table = Bench::WsTable.new("ws_broadcast", [row], Bench::WsLoad.new).markdown
    assert_includes table, "| iodine | 1 worker | 190,000 | 2.0 µs | 1.0 µs | 0.50 ms | 1.00 ms | **3 / 0 / 0** | 0 | — |  |"
    assert_includes table, "ws_load's CPU per delivery as a share of the server's: iodine 50% (ws_load busy 20% of a core)."
  end
end
