# frozen_string_literal: true

# --worker-max-rss: a worker whose resident memory passes the limit is stopped as a TERM
# stops it (no new connections, the requests it has finish) and replaced at once; under load
# not one request fails, the log says why, and the metrics count it.
require_relative "helper"
require_relative "support/lifecycle"
require_relative "support/prometheus_text"
require "open3"

class TestWorkerMemory < Minitest::Test
  include UpTestHelpers
  include LifecycleHelpers

  def test_a_worker_past_the_limit_is_replaced_under_load_without_a_failed_request
    server = start_up("-w", "2", "-t", "2", "--worker-max-rss", "150", "--metrics-url", "tcp://127.0.0.1:0")
    metrics = server.wait_for(%r{metrics on http://127\.0\.0\.1:(\d+)})[1].to_i
    pids = booted(server, 2)
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(200)
    sock = TCPSocket.new("127.0.0.1", server.port)
    sock.write("GET /grow?mb=200 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
    grown = read_response(sock).body[/\Agrew (\d+)\z/, 1].to_i
    assert_includes pids, grown
    index = pids.index(grown)
    server.wait_for(/worker #{index} \(pid #{grown}\) uses \d+ MB, past --worker-max-rss 150 MB; replacing it/)
    server.wait_for(/worker #{index} booted \(pid (?!#{grown})\d+\)/)
    server.wait_for(/worker #{index} \(pid #{grown}\) stopped/)
    load.wait_for_ok(200)
    result = load.stop
    lost = LoadGenerator.lost(result, @ids_file)
    report("--worker-max-rss replacement", result, lost)
    assert_empty result.failed
    assert_empty lost
    refute alive?(grown)
    out, = Timeout.timeout(15) { Open3.capture2("curl", "-s", "-m", "10", "http://127.0.0.1:#{metrics}/metrics") }
    text = PrometheusText.new(out)
    assert_equal 1, text.sum("up_worker_memory_replacements_total")
    assert_equal 1, text.sum("up_worker_restarts_total", worker: index)
    server.signal(:TERM)
    assert server.wait.success?
  ensure
    sock&.close
  end

  def test_workers_under_the_limit_are_left_alone
    server = start_up("-w", "2", "--worker-max-rss", "1000")
    booted(server, 2)
    load = LoadGenerator.new(server.port)
    load.wait_for_ok(300)
    result = load.stop
    assert_empty result.failed
    server.signal(:TERM)
    assert server.wait.success?
    refute_match(/past --worker-max-rss/, server.output)
    assert_equal 2, server.output.scan(/worker \d booted/).size
  end

  def test_one_process_says_it_cannot_replace_itself
    server = start_up("-w", "1", "--worker-max-rss", "100")
    server.wait_for(/--worker-max-rss needs workers \(-w 2 or more\)/)
    server.signal(:TERM)
    assert server.wait.success?
  end
end
