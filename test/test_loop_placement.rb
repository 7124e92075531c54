# frozen_string_literal: true

# Where a worker's loop runs: on its app threads, taking turns (calls that compute), or on a
# native thread of its own (calls that wait with the GVL released). Without --io-thread or
# --no-io-thread the worker measures its app calls and moves the loop itself, and /metrics
# shows where it is (up_loop_io_thread) and how often it moved (up_loop_switches_total). A
# worker is started as a user does (exe/up_ruby, one process) and loaded by client threads of
# this test, each on one keep-alive connection: every request must get exactly its own
# response, through every move.
require_relative "helper"
require_relative "support/cli_process"
require_relative "support/prometheus_text"
require_relative "support/redis_server"
require "fileutils"
require "net/http"
require "tmpdir"

class TestLoopPlacement < Minitest::Test
  include UpTestHelpers

  APP = "test/rackup/loop_placement.ru"
  CLIENTS = 4
  # How long a worker may take to move its loop under load: a decision is two windows of a
  # tenth of a second each, far below this.
  MOVE_WITHIN = 15

  # Keep-alive clients sending GET /?ID and checking that the response to each is ID, until
  # stopped (at most max_seconds).
  class Load
    attr_reader :answered, :errors

    def initialize(port, max_seconds: 40)
      @port = port
      @deadline = now + max_seconds
      @stop = false
      @answered = 0
      @errors = []
      @lock = Mutex.new
      @threads = Array.new(CLIENTS) { |i| Thread.new { run(i) } }
    end

    def stop
      @stop = true
      @threads.each { |t| t.join(20) || t.kill }
      self
    end

    def wait_for(count, timeout: 20)
      limit = now + timeout
      sleep 0.01 until @lock.synchronize { @answered } >= count || now > limit
    end

    private

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end

    def run(client)
      sock = TCPSocket.new("127.0.0.1", @port)
      n = 0
      until @stop || now > @deadline
        id = "c#{client}-#{n += 1}"
        sock.write("GET /?#{id} HTTP/1.1\r\nHost: t\r\n\r\n")
        body = read_body(sock)
        @lock.synchronize do
          body == id ? @answered += 1 : @errors << "#{id}: got #{body.inspect}"
        end
      end
      # Nothing more may come: a second answer to any request would be here.
      extra = sock.wait_readable(0.2) && sock.read_nonblock(4096, exception: false)
      @lock.synchronize { @errors << "c#{client}: bytes after the last response: #{extra.inspect}" } if extra.is_a?(String)
    rescue StandardError => e
      @lock.synchronize { @errors << "c#{client}: #{e.class}: #{e.message}" }
    ensure
      sock&.close
    end

    def read_body(sock)
      head = +""
      head << sock.readpartial(1) until head.end_with?("\r\n\r\n")
      raise "status: #{head.lines.first.inspect}" unless head.start_with?("HTTP/1.1 200 ")

      length = head[/^content-length: *(\d+)/i, 1] or raise "no content-length in #{head.inspect}"
      sock.read(length.to_i)
    end
  end

  def start(*args, behaviour: "compute", env: {})
    @server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", "-t", "4", "--metrics-url",
                             "tcp://127.0.0.1:0", *args, APP,
                             env: { "UP_TEST_BEHAVIOUR" => behaviour, "RACK_ENV" => "production", **env })
    @metrics = @server.wait_for(%r{metrics on http://127\.0\.0\.1:(\d+)})[1].to_i
    @port = @server.port
    @load = Load.new(@port)
    @load.wait_for(50)
  end

  def teardown
    @load&.stop
    @server&.stop
    @redis&.stop
    FileUtils.rm_rf(@redis_dir) if @redis_dir
    super
  end

  def placement
    text = PrometheusText.new(Net::HTTP.get(URI("http://127.0.0.1:#{@metrics}/metrics")))
    [text.sum("up_loop_io_thread", worker: "0").to_i, text.sum("up_loop_switches_total", worker: "0").to_i]
  end

  def behave(kind)
    res = Net::HTTP.start("127.0.0.1", @port) { |h| h.send_request("PUT", "/behaviour/#{kind}") }
    assert_equal kind, res.body
  end

  # Waits until the loop is where expected (1: its own thread), while the load runs.
  def wait_for_loop(io_thread)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + MOVE_WITHIN
    loop do
      where, switches = placement
      return switches if where == io_thread

      flunk "the loop stayed #{where == 1 ? "on its thread" : "on the app threads"} for #{MOVE_WITHIN} s" \
        if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      sleep 0.1
    end
  end

  def assert_load_clean
    load = @load.stop
    @load = nil
    assert_empty load.errors.first(5), "#{load.errors.size} requests failed"
    assert_operator load.answered, :>, 100
  end

  def test_an_app_that_computes_keeps_the_loop_on_its_app_threads
    start
    @load.wait_for(@load.answered + 1500)
    where, switches = placement
    assert_equal [0, 0], [where, switches], "the loop moved for calls that only compute"
    assert_load_clean
  end

  def test_an_app_that_waits_on_a_socket_gets_a_loop_thread
    start(behaviour: "wait")
    assert_operator wait_for_loop(1), :>=, 1
    assert_load_clean
  end

  # A GET to a Redis on the same machine: the call often does not block (Redis, woken by the
  # request, runs on the caller's core and has answered by the time the caller reads), yet the
  # thread waits for Redis on every call, which a loop thread uses.
  def test_an_app_that_calls_a_local_redis_gets_a_loop_thread
    @redis_dir = Dir.mktmpdir("up-placement-redis")
    @redis = RedisServer.new(@redis_dir).start
    start(behaviour: "redis", env: { "UP_TEST_REDIS_URL" => @redis.url })
    assert_operator wait_for_loop(1), :>=, 1
    assert_load_clean
  end

  def test_the_loop_follows_the_app_when_its_calls_change_under_load
    start(behaviour: "wait")
    wait_for_loop(1)
    behave("compute")
    assert_operator wait_for_loop(0), :>=, 2
    behave("wait")
    assert_operator wait_for_loop(1), :>=, 3
    assert_load_clean
  end

  # The loop's thread owns the loop when the stop comes: it runs the stop's turns and lets go.
  def test_a_stop_under_load_with_the_loop_on_its_thread_ends_the_worker_cleanly
    start(behaviour: "wait")
    wait_for_loop(1)
    @server.signal(:TERM)
    assert_predicate @server.wait(timeout: 20), :success?
    assert_match(/stopped/, @server.output)
    @server = nil
  end

  def test_io_thread_keeps_the_loop_on_its_thread_for_calls_that_compute
    start("--io-thread")
    @load.wait_for(@load.answered + 1500)
    assert_equal [1, 0], placement
    assert_load_clean
  end

  def test_no_io_thread_keeps_the_loop_on_the_app_threads_for_calls_that_wait
    start("--no-io-thread", behaviour: "wait")
    @load.wait_for(@load.answered + 1500)
    assert_equal [0, 0], placement
    assert_load_clean
  end
end
