# frozen_string_literal: true

# examples/json_api served by exe/up_ruby against a real redis-server (Debian's, installed by
# bin/setup --test) that each test starts on a free loopback port, in a temp dir, with no
# persistence: the value round-trips, each worker of a cluster holds its own Redis connection,
# a Redis that is down is a 503 with a JSON error, and one that is back is served again
# without restarting UP!.
require_relative "helper"
require_relative "support/cli_process"
require "json"
require "tmpdir"
require "fileutils"

class TestExampleJsonApi < Minitest::Test
  include UpTestHelpers

  APP = "examples/json_api/config.ru"

  def setup
    @dir = Dir.mktmpdir("up-json-api")
    @redis_port = free_port
    start_redis
  end

  def teardown
    super
    @up&.stop
    @redis&.stop
    FileUtils.rm_rf(@dir)
  end

  def test_post_then_get_returns_the_value_in_single_mode
    start_up("-w", "1")
    res = post_json('{"foo":"bar"}')
    assert_equal [200, { "foo" => "bar" }], [res.status, JSON.parse(res.body)]
    res = get("/")
    assert_equal 200, res.status
    assert_equal "application/json", res["content-type"]
    assert_equal({ "foo" => "bar" }, JSON.parse(res.body))
  end

  def test_a_body_without_a_string_foo_is_a_400_and_changes_nothing
    start_up("-w", "1")
    post_json('{"foo":"kept"}')
    ['{"foo":1}', "[]", "not json", ""].each do |body|
      res = post_json(body)
      assert_equal 400, res.status, body
      assert_match(/"foo"/, JSON.parse(res.body).fetch("error"), body)
    end
    assert_equal({ "foo" => "kept" }, JSON.parse(get("/").body))
  end

  # Bursts of requests on new connections until both workers have served one (a new
  # connection wakes one idle worker, so one at a time would all go to the same one); every
  # answer carries the value, and each worker holds Redis connections of its own while the
  # master holds none.
  def test_each_worker_connects_to_redis_on_its_own
    start_up("-w", "2", "-t", "5")
    workers = 2.times.map { |i| @up.wait_for(/worker #{i} booted \(pid (\d+)\)/)[1].to_i }
    assert_equal 200, post_json('{"foo":"from the test"}').status
    holders = []
    20.times do
      Array.new(10) { Thread.new { get("/") } }.map(&:value).each do |res|
        assert_equal [200, { "foo" => "from the test" }], [res.status, JSON.parse(res.body)]
      end
      holders = pids_connected_to_redis([@up.pid, *workers])
      break if holders.sort == workers.sort
    end
    assert_equal workers.sort, holders.sort, "processes holding a Redis connection (workers #{workers})"
  end

  def test_503_while_redis_is_down_and_200_once_it_is_back_in_single_mode
    start_up("-w", "1", "-t", "5")
    check_redis_down_and_back
  end

  def test_503_while_redis_is_down_and_200_once_it_is_back_with_two_workers
    start_up("-w", "2", "-t", "5")
    check_redis_down_and_back
  end

  # One app thread, so the next request uses the very connection the restart broke: the app
  # retries on a new one instead of failing that request.
  def test_a_redis_restart_between_requests_fails_no_request
    start_up("-w", "1", "-t", "1")
    assert_equal 200, post_json('{"foo":"before"}').status
    @redis.stop
    start_redis
    res = get("/")
    assert_equal [200, { "foo" => nil }], [res.status, JSON.parse(res.body)], res.body
  end

  # The same answers in process, through Rack::Lint: valid Rack whatever the outcome.
  def test_every_answer_is_valid_rack
    require "rack/lint"
    require_relative "../examples/json_api/json_api"
    errors = capture_rack_errors do
      start_server(Rack::Lint.new(JsonApi.new(url: "redis://127.0.0.1:#{@redis_port}")))
      assert_equal 200, post_json('{"foo":"linted"}').status
      assert_equal({ "foo" => "linted" }, JSON.parse(get("/").body))
      assert_equal 400, post_json("{").status
      assert_equal 404, get("/elsewhere").status
      res = raw_request("DELETE / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
      assert_equal [405, "GET, POST"], [res.status, res["allow"]]
      @redis.stop
      assert_equal 503, get("/").status
    end
    assert_match(/\Ajson_api: 503, RedisClient::CannotConnectError: /, errors)
  end

  private

  def check_redis_down_and_back
    assert_equal 200, post_json('{"foo":"before"}').status
    assert_equal({ "foo" => "before" }, JSON.parse(get("/").body))

    @redis.stop
    6.times do
      res = get("/")
      assert_equal 503, res.status, res.body
      assert_equal "application/json", res["content-type"]
      assert_equal({ "error" => "redis unavailable" }, JSON.parse(res.body))
      assert_equal "1", res["retry-after"]
    end
    assert_equal 503, post_json('{"foo":"lost"}').status
    @up.wait_for(/json_api: 503, RedisClient::CannotConnectError: .*127\.0\.0\.1:#{@redis_port}/)

    start_redis # same port, empty (no persistence)
    6.times do
      res = get("/")
      assert_equal [200, { "foo" => nil }], [res.status, JSON.parse(res.body)], res.body
    end
    assert_equal 200, post_json('{"foo":"after"}').status
    assert_equal({ "foo" => "after" }, JSON.parse(get("/").body))
  end

  # What servers started in the block write to rack.errors (the $stderr they started with).
  def capture_rack_errors
    $stderr = StringIO.new
    yield
    $stderr.string
  ensure
    $stderr = STDERR
  end

  def start_up(*args)
    @up = CLIProcess.new("-b", "127.0.0.1", "-p", "0", *args, APP,
                         env: { "REDIS_URL" => "redis://127.0.0.1:#{@redis_port}" })
    @port = @up.port
  end

  def start_redis
    @redis = CLIProcess.new("--port", @redis_port.to_s, "--bind", "127.0.0.1", "--save", "",
                            "--appendonly", "no", "--dir", @dir, "--daemonize", "no",
                            command: ["redis-server"], wait: false, chdir: @dir)
    @redis.wait_for(/Ready to accept connections/)
  end

  # A free port below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768 and
  # up by default): no outgoing connection of another process takes it while Redis is down
  # between a stop and a start on it.
  def free_port
    100.times do
      port = rand(20_000...32_768)
      TCPServer.new("127.0.0.1", port).close
      return port
    rescue Errno::EADDRINUSE
      next
    end
    flunk "no free port between 20000 and 32767"
  end

  def post_json(body)
    raw_request("POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n" \
                "Content-Length: #{body.bytesize}\r\nConnection: close\r\n\r\n#{body}")
  end

  # Those of pids with an open TCP connection to the test's Redis, read from /proc: the
  # socket inodes of established connections to 127.0.0.1:PORT, then each process's fds.
  def pids_connected_to_redis(pids)
    remote = format("0100007F:%04X", @redis_port)
    inodes = File.readlines("/proc/net/tcp").drop(1).filter_map do |line|
      fields = line.split
      "socket:[#{fields[9]}]" if fields[2] == remote && fields[3] == "01"
    end
    pids.select do |pid|
      Dir.glob("/proc/#{pid}/fd/*").any? do |fd|
        inodes.include?(File.readlink(fd))
      rescue SystemCallError
        false
      end
    end
  end
end
