# frozen_string_literal: true

# bench/ws_load, the WebSocket load client of bench/run, against a real WebSocket
# server: Node with the npm ws package (bench/config/ws_node.js, installed into
# bench/node_modules by bin/setup --test), on a free loopback port. Each mode runs briefly and
# its figures must be sane, so the client cannot rot unseen between benchmark runs; its parser
# tables run under ASan and UBSan (make check). About 5 s in all.
require_relative "helper"
require "json"
require "open3"
require "tmpdir"
$LOAD_PATH.unshift(File.expand_path("../bench/lib", __dir__))
require "bench/ws_load"

class TestWsLoad < Minitest::Test
  ROOT = File.expand_path("..", __dir__)
  DIR = File.join(ROOT, "bench", "ws_load")
  CLIENT = File.join(DIR, "ws_load")
  NODE_APP = File.join(ROOT, "bench", "config", "ws_node.js")
  ZERO_ERRORS = { "connect" => 0, "handshake" => 0, "closed" => 0, "protocol" => 0, "mismatch" => 0,
                  "timeout" => 0 }.freeze

  def time_limit_seconds
    60
  end

  def setup
    out, status = Open3.capture2e("make", "-C", DIR, "ws_load")
    assert status.success?, "make -C bench/ws_load failed:\n#{out}"
  end

  def teardown
    @servers&.each do |pid, io|
      Process.kill(:TERM, pid)
      Process.wait(pid)
      io.close
    rescue SystemCallError
      nil
    end
    super
  end

  # Starts ws_node.js with app on a free port and returns the port, once its line says so.
  def node_server(app)
    io = IO.popen(["node", NODE_APP, "0", app, { err: %i[child out] }])
    (@servers ||= []) << [io.pid, io]
    line = io.gets.to_s
    port = line[/listening on 127\.0\.0\.1:(\d+)/, 1]
    assert port, "ws_node.js did not start: #{line}#{io.read_nonblock(4096, exception: false)}"
    Integer(port)
  end

  # Runs the client with args; returns its report as a Hash.
  def run_client(*args)
    out, err, status = Open3.capture3(CLIENT, *args)
    assert status.success?, "ws_load #{args.join(" ")} exited #{status.exitstatus}: #{err}"
    JSON.parse(out.lines.last)
  end

  def assert_latencies_ordered(report)
    p50, p99, max = report.values_at("latency_p50_us", "latency_p99_us", "latency_max_us")
    assert_operator p50, :>, 0
    assert_operator p50, :<=, p99
    assert_operator p99, :<=, max
  end

  def test_parser_tables_pass_under_sanitizers
    out, status = Open3.capture2e("make", "-C", DIR, "check")
    assert status.success?, out
    assert_match(/\d+ passed, 0 failed/, out)
  end

  def test_echo_counts_round_trips_with_ordered_latencies
    port = node_server("ws_echo")
    report = run_client("echo", "--port", port.to_s, "-c", "10", "-s", "512", "-d", "1")
    assert_equal ZERO_ERRORS, report["errors"], report["first_error"]
    assert_equal 10, report["opened"]
    assert_operator report["round_trips"], :>, 0
    assert_in_delta report["round_trips"] / report["seconds"], report["per_s"], 1.0
    assert_latencies_ordered(report)
    assert_operator report["cpu_s"], :>, 0
    assert_operator report["cpu_s"], :<=, report["wall_s"] * 1.05
  end

  def test_broadcast_delivers_every_message_to_every_subscriber_once_in_order
    port = node_server("ws_broadcast")
    report = run_client("broadcast", "--port", port.to_s, "-c", "20", "-w", "8", "-d", "1")
    assert_equal ZERO_ERRORS, report["errors"], report["first_error"]
    assert_equal [20, 20, 8], report.values_at("subscribers", "subscribed", "window")
    assert_equal [0, 0, 0], report.values_at("lost", "duplicates", "out_of_order")
    assert_operator report["deliveries"], :>, 0
    # Deliveries after the measured second are checked, not counted.
    assert_operator report["deliveries"], :<=, report["published"] * 20
    assert_latencies_ordered(report)
  end

  # Through Bench::WsLoad, as bench/run drives it: the harness reads the server's memory at
  # the end of the hold, while every connection is still open, and then the sample echoes.
  def test_idle_holds_every_connection_and_pauses_for_the_harness
    port = node_server("ws_echo")
    held = nil
    out = File.join(Dir.mktmpdir("ws-load-test-"), "idle.txt")
    result = Bench::WsLoad.new.run("idle", port, 0.3, out, connections: 300) do
      held = true
      :read_at_the_end_of_the_hold
    end
    assert held
    assert_equal :read_at_the_end_of_the_hold, result.rss_held_kb
    assert_equal({}, result.errors, result.first_error)
    assert_equal [300, 300], [result.opened, result.still_open]
    assert_equal [100, 100], [result.sample, result.sample_echoed]
    assert_operator result.requests_per_sec, :>, 0
    assert_includes File.read(out), '"phase":"held"'
  end

  def test_a_server_that_does_not_upgrade_is_a_handshake_error
    server = TCPServer.new("127.0.0.1", 0)
    port = server.addr[1]
    answer = Thread.new do
      client = server.accept
      client.readpartial(4096)
      client.write("HTTP/1.1 426 Upgrade Required\r\nContent-Length: 0\r\n\r\n")
      client.close
    end
    report = run_client("echo", "--port", port.to_s, "-c", "1", "-d", "0.2", "--open-timeout", "5")
    answer.join
    assert_equal 1, report["errors"]["handshake"]
    assert_equal 0, report["round_trips"]
    assert_match(/not a 101 response: HTTP\/1\.1 426/, report["first_error"])
  ensure
    server&.close
  end

  def test_only_loopback_hosts_are_accepted
    ["10.0.0.1", "192.168.1.1", "example.com", "127.0.0.2"].each do |host|
      _out, err, status = Open3.capture3(CLIENT, "echo", "--host", host, "--port", "80", "-d", "0.1")
      assert_equal 2, status.exitstatus, host
      assert_match(/refusing host/, err)
    end
  end
end
