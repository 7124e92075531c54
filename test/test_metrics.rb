# frozen_string_literal: true

# The metrics endpoint (--metrics-url) and --stop-delay, as Prometheus, a load balancer and
# Kubernetes use them: /metrics read by a strict text-format parser while load runs, one
# scrape covering every worker; /live; /ready read with curl, 503 from the moment a stop
# begins while the server goes on answering for --stop-delay, and not one request failing.
require_relative "helper"
require_relative "support/lifecycle"
require_relative "support/prometheus_text"
require "open3"

class TestMetrics < Minitest::Test
  include UpTestHelpers
  include LifecycleHelpers

  def start_with_metrics(*args, **options)
    server = start_up("--metrics-url", "tcp://127.0.0.1:0", *args, **options)
    @metrics = server.wait_for(%r{metrics on http://127\.0\.0\.1:(\d+)})[1].to_i
    server
  end

  # [status code, body] of curl on the metrics endpoint.
  def curl(path, *args)
    out, status = Timeout.timeout(15) do
      Open3.capture2("curl", "-s", "-m", "10", "-w", "\n%{http_code}", *args, "http://127.0.0.1:#{@metrics}#{path}")
    end
    assert status.success?, "curl #{path} failed"
    body, _, code = out.rpartition("\n")
    [code.to_i, body]
  end

  def scrape
    code, body = curl("/metrics", "-D", "-")
    assert_equal 200, code
    head, text = body.split("\r\n\r\n", 2)
    assert_match %r{^content-type: text/plain; version=0\.0\.4}i, head
    PrometheusText.new(text)
  end

  def test_metrics_under_load_parse_and_cover_every_worker
    server = start_with_metrics("-w", "2", "-t", "2", "--worker-timeout", "4")
    booted(server, 2)
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(300)
    scrapes = Array.new(5) do
      load.wait_for_ok(50)
      scrape
    end
    result = load.stop
    assert_empty result.failed
    scrapes.each_cons(2) do |a, b| # counters never go back
      %w[up_requests_total up_request_duration_seconds_count].each do |name|
        a.find(name).each do |s|
          later = b.find(name, **s.labels.transform_keys(&:to_sym))
          assert_operator later.sum(&:value), :>=, s.value, "#{name}#{s.labels}"
        end
      end
    end
    # Heartbeats bring each worker's counters to the master within a second (--worker-timeout 4).
    final = nil
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
    loop do
      final = scrape
      break if final.sum("up_requests_total", status: 200) >= result.ok
      raise "the scrape never caught up with #{result.ok} requests" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.3
    end
    assert_equal %w[0 1], final.find("up_requests_total", status: 200).map { |s| s.labels["worker"] }.sort,
                 "both workers served and both are in one scrape"
    assert_equal final.sum("up_requests_total"), final.sum("up_request_duration_seconds_count")
    assert_equal %w[0 1], final.find("up_resident_memory_bytes").map { |s| s.labels["worker"] }.sort
    final.find("up_resident_memory_bytes").each { |s| assert_operator s.value, :>, 1_000_000 }
    assert_equal 2, final.sum("up_workers")
    assert_equal 2, final.sum("up_workers_booted")
    assert_equal 4, final.sum("up_threads"), "-t 2 in each of 2 workers"
    assert_equal 1, final.sum("up_ready")
    %w[up_connections up_websocket_clients up_sse_clients up_busy_threads up_queued_requests
       up_pubsub_published_total up_worker_restarts_total].each { |name| refute_empty final.find(name), name }
    # The app sleeps 5 ms a request: the sum of durations says so.
    assert_operator final.sum("up_request_duration_seconds_sum"), :>=, 0.004 * final.sum("up_request_duration_seconds_count")
  end

  def test_a_killed_worker_shows_as_a_restart_and_statuses_are_told_apart
    server = start_with_metrics("-w", "2", "--worker-timeout", "4")
    pid = booted(server, 2).first
    Process.kill(:KILL, pid)
    server.wait_for(/worker 0 booted \(pid (?!#{pid})\d+\)/)
    assert_equal 1, scrape.sum("up_worker_restarts_total", worker: 0)
    code, body = curl("/nope", "-X", "POST")
    assert_equal 405, code, body
    assert_equal 404, curl("/nope").first
    assert_equal [200, "live\n"], curl("/live")
  end

  def test_single_process_metrics_count_by_status
    server = start_with_metrics("-w", "1", app: "test/rackup/features.ru")
    3.times { get("/", port: server.port) }
    2.times { get("/fail", port: server.port) }
    metrics = scrape
    assert_equal 1, metrics.sum("up_workers")
    assert_equal 3, metrics.sum("up_requests_total", status: 200)
    assert_equal 2, metrics.sum("up_requests_total", status: 500)
    assert_equal 5, metrics.sum("up_request_duration_seconds_count")
  end

  def test_ready_turns_503_at_once_on_term_and_stop_delay_fails_no_request
    server = start_with_metrics("-w", "2", "-t", "2", "--stop-delay", "2")
    booted(server, 2)
    assert_equal [200, "ready\n"], curl("/ready")
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(200)
    server.signal(:TERM)
    # From the moment the stop begins: the probe reports 503 well within the delay.
    assert_equal [503, "not ready\n"], curl("/ready")
    served_when_not_ready = load.ok
    server.wait_for(/TERM: stopping 2 workers/)
    served_in_delay = load.ok - served_when_not_ready
    assert server.wait.success?
    result = load.stop
    lost = LoadGenerator.lost(result, @ids_file)
    report("TERM with --stop-delay 2", result, lost)
    assert_operator served_in_delay, :>, 50, "requests go on being answered during --stop-delay"
    assert_empty result.failed
    assert_empty lost
    assert_match(/TERM: not ready; serving 2\.0 s more before stopping/, server.output)
  end

  def test_stop_delay_in_a_single_process
    server = start_with_metrics("-w", "1", "-t", "2", "--stop-delay", "1.5")
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(100)
    server.signal(:TERM)
    assert_equal 503, curl("/ready").first
    served_when_not_ready = load.ok
    load.wait_for_ok(50, timeout: 1.4)
    assert server.wait.success?
    result = load.stop
    assert_operator load.ok - served_when_not_ready, :>=, 50
    assert_empty result.failed
    assert_empty LoadGenerator.lost(result, @ids_file)
  end

  def test_a_second_term_ends_the_delay
    server = start_with_metrics("-w", "2", "--stop-delay", "60")
    booted(server, 2)
    server.signal(:TERM)
    server.wait_for(/not ready; serving 60\.0 s more/)
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    server.signal(:TERM)
    assert server.wait(timeout: 20).success?
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :<, 15
  end

  def test_the_config_file_sets_them_too
    config = File.join(@dir, "up.rb")
    File.write(config, <<~RUBY)
      metrics_url "unix://#{@dir}/metrics.sock"
      stop_delay 0.5
      worker_max_rss 4096
    RUBY
    server = start_up("-w", "2", "-C", config)
    server.wait_for(%r{metrics on unix://#{Regexp.escape(@dir)}/metrics\.sock})
    booted(server, 2)
    out, = Timeout.timeout(15) do
      Open3.capture2("curl", "-s", "-m", "10", "--unix-socket", "#{@dir}/metrics.sock", "http://localhost/ready")
    end
    assert_equal "ready\n", out
    server.signal(:TERM)
    server.wait_for(/not ready; serving 0\.5 s more/)
    assert server.wait.success?
  end

  def test_bad_values_are_refused_in_one_line
    [
      [%w[--metrics-url 127.0.0.1:9394], /--metrics-url must be tcp:\/\/HOST:PORT or unix:\/\/PATH/],
      [%w[--stop-delay -1], /--stop-delay must be between 0 \(never\) and 86400 seconds/],
      [%w[--worker-max-rss -5], /--worker-max-rss must not be negative/]
    ].each do |args, message|
      out, status = Timeout.timeout(20) do
        Open3.capture2e(RbConfig.ruby, CLIProcess::EXE, *args, "test/rackup/hello.ru", chdir: CLIProcess::ROOT)
      end
      assert_equal 1, status.exitstatus, out
      assert_match message, out
    end
  end

  UP_NODE = [RbConfig.ruby, File.join(CLIProcess::ROOT, "exe", "up_node")].freeze

  # up_node: the same endpoint, names and --stop-delay, from its primary and its workers.
  def test_up_node_metrics_and_stop_delay_under_load
    server = start_with_metrics("-w", "2", "--stop-delay", "2", app: "test/rackup/hello.ru", command: UP_NODE)
    server.wait_for(/worker 1 \(pid \d+\) booted/)
    server.wait_for(/worker 0 \(pid \d+\) booted/)
    assert_equal [200, "ready\n"], curl("/ready")
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(200)
    metrics = scrape
    assert_equal %w[0 1], metrics.find("up_requests_total", status: 200).map { |s| s.labels["worker"] }.sort
    assert_operator metrics.sum("up_requests_total", status: 200), :>=, 200
    assert_equal metrics.sum("up_requests_total"), metrics.sum("up_request_duration_seconds_count")
    assert_equal 2, metrics.find("up_resident_memory_bytes").size
    server.signal(:TERM)
    assert_equal [503, "not ready\n"], curl("/ready")
    served_when_not_ready = load.ok
    server.wait_for(/worker \d stopping/)
    served_in_delay = load.ok - served_when_not_ready
    assert server.wait.success?
    result = load.stop
    assert_operator served_in_delay, :>, 50, "requests go on being answered during --stop-delay"
    assert_empty result.failed
  end

  def test_up_node_single_process_metrics_and_stop_delay
    server = start_with_metrics("-w", "1", "--stop-delay", "1", app: "test/rackup/hello.ru", command: UP_NODE)
    3.times { get("/", port: server.port) }
    get("/nope", port: server.port)
    metrics = scrape
    assert_equal 1, metrics.sum("up_workers")
    assert_equal 4, metrics.sum("up_requests_total", status: 200), "hello.ru answers every path"
    server.signal(:TERM)
    assert_equal 503, curl("/ready").first
    assert_equal "Hello World", get("/", port: server.port).body, "still served during --stop-delay"
    assert server.wait.success?
  end

  UP = [RbConfig.ruby, File.join(CLIProcess::ROOT, "exe", "up")].freeze

  # up: up_node's endpoint and primary; the engine's workers count what the app answered.
  def test_up_metrics_cover_both_workers_and_tell_statuses_apart_under_load
    server = start_with_metrics("-w", "2", app: "test/rackup/features.ru", command: UP)
    server.wait_for(/worker 1 \(pid \d+\) booted/)
    server.wait_for(/worker 0 \(pid \d+\) booted/)
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(200)
    failing = Array.new(8) { get("/fail", port: server.port).status }
    assert_equal [500] * 8, failing
    scrapes = Array.new(3) do
      load.wait_for_ok(50)
      scrape
    end
    result = load.stop
    assert_empty result.failed
    scrapes.each_cons(2) do |a, b| # counters never go back
      a.find("up_requests_total").each do |s|
        assert_operator b.sum("up_requests_total", **s.labels.transform_keys(&:to_sym)), :>=, s.value, s.labels.to_s
      end
    end
    final = scrape
    assert_equal %w[0 1], final.find("up_requests_total", status: 200).map { |s| s.labels["worker"] }.sort,
                 "both workers served and both are in one scrape"
    assert_operator final.sum("up_requests_total", status: 200), :>=, result.ok
    assert_equal 8, final.sum("up_requests_total", status: 500)
    assert_equal final.sum("up_requests_total"), final.sum("up_request_duration_seconds_count")
    assert_equal %w[0 1], final.find("up_resident_memory_bytes").map { |s| s.labels["worker"] }.sort
    assert_equal 2, final.sum("up_workers_booted")
    assert_equal 1, final.sum("up_ready")
    assert_equal %w[0 1], final.find("up_connections").map { |s| s.labels["worker"] }.sort
  end

  def test_up_ready_turns_503_on_term_and_stop_delay_fails_no_request
    server = start_with_metrics("-w", "2", "--stop-delay", "2", app: "test/rackup/hello.ru", command: UP)
    server.wait_for(/worker 1 \(pid \d+\) booted/)
    server.wait_for(/worker 0 \(pid \d+\) booted/)
    assert_equal [200, "ready\n"], curl("/ready")
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(200)
    server.signal(:TERM)
    assert_equal [503, "not ready\n"], curl("/ready")
    served_when_not_ready = load.ok
    server.wait_for(/worker \d stopping/)
    served_in_delay = load.ok - served_when_not_ready
    assert server.wait.success?
    result = load.stop
    assert_operator served_in_delay, :>, 50, "requests go on being answered during --stop-delay"
    assert_empty result.failed
    assert_match(/TERM: not ready; serving 2 s more before stopping/, server.output)
  end

  def test_up_single_process_metrics_and_stop_delay
    server = start_with_metrics("-w", "1", "--stop-delay", "1", app: "test/rackup/features.ru", command: UP)
    3.times { get("/", port: server.port) }
    2.times { get("/fail", port: server.port) }
    metrics = scrape
    assert_equal 1, metrics.sum("up_workers")
    assert_equal 3, metrics.sum("up_requests_total", status: 200)
    assert_equal 2, metrics.sum("up_requests_total", status: 500)
    assert_equal 5, metrics.sum("up_request_duration_seconds_count")
    assert_equal 1, metrics.sum("up_ready")
    server.signal(:TERM)
    assert_equal [503, "not ready\n"], curl("/ready")
    assert_equal 200, get("/", port: server.port).status, "still served during --stop-delay"
    assert server.wait.success?
    assert_match(/TERM: not ready; serving 1 s more before stopping/, server.output)
  end

  def test_up_help_shows_them_and_hides_what_up_refuses
    out, status = Timeout.timeout(30) { Open3.capture2e(*UP, "--help", chdir: CLIProcess::ROOT) }
    assert status.success?, out
    assert_includes out, "--metrics-url URL"
    assert_includes out, "--stop-delay SECONDS"
    refute_includes out, "--worker-max-rss"
  end

  def test_the_node_runtimes_refuse_what_they_do_not_have
    { "up_node" => [%w[--worker-max-rss 512]], "up" => [%w[--worker-max-rss 512]] }.each do |program, cases|
      cases.each do |args|
        out, status = Timeout.timeout(30) do
          Open3.capture2e(RbConfig.ruby, File.join(CLIProcess::ROOT, "exe", program), *args, "test/rackup/hello.ru",
                          chdir: CLIProcess::ROOT)
        end
        assert_equal 1, status.exitstatus, out
        assert_match(/#{args.first} is not supported by #{program} yet/, out)
      end
    end
  end
end
