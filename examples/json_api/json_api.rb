# frozen_string_literal: true

require "json"
require "redis-client"
require "hiredis-client"

# A JSON API on Redis, the app examples/json_api/config.ru serves. GET / reads the key `foo`
# from Redis on every request and answers {"foo": VALUE} (null when the key is unset);
# POST / with the JSON body {"foo": "VALUE"} sets it and answers the same document. While
# Redis cannot be reached each request answers 503 with {"error": "redis unavailable"} and
# logs why to rack.errors; once Redis is back the next request reconnects, no restart needed.
#
# It talks to Redis through hiredis-client, redis-client's driver in C: the same API for
# 10-17% less server CPU per GET here than the pure-Ruby driver (34% fewer instructions
# under callgrind); the commit that chose it has the figures.
#
# Owns one Redis connection per app thread, made on that thread's first request. A
# connection belongs to the process that made it: under -w N, a worker never uses one its
# master made (the key includes the pid), so each worker connects on its own.
class JsonApi
  KEY = "foo"
  JSON_HEADERS = { "content-type" => "application/json" }.freeze
  # Seconds. A refused connection fails at once; this bounds a Redis that hangs instead.
  TIMEOUT = 1.0

  def initialize(url:)
    @config = RedisClient.config(url: url, driver: :hiredis, timeout: TIMEOUT,
                                 # A Redis restart breaks every open connection: retry once on
                                 # a new one, so the first request after it still succeeds.
                                 reconnect_attempts: 1)
    @local_key = :"json_api_redis_#{object_id}"
  end

  def call(env)
    return error(404, "not found") unless env["PATH_INFO"] == "/" || env["PATH_INFO"].empty?

    case env["REQUEST_METHOD"]
    when "GET" then show
    when "POST" then update(env["rack.input"])
    else error(405, "method not allowed", "allow" => "GET, POST")
    end
  rescue RedisClient::ConnectionError => e
    # The cause (host, port, errno) goes to the log, not to clients.
    env["rack.errors"].puts("json_api: 503, #{e.class}: #{e.message}")
    error(503, "redis unavailable", "retry-after" => "1")
  end

  private

  def show
    document(redis.call("GET", KEY))
  end

  def update(input)
    value = parse_foo(input&.read.to_s)
    return error(400, 'the body must be a JSON object with a string "foo"') unless value

    redis.call("SET", KEY, value)
    document(value)
  end

  # The string under "foo" in a JSON object, or nil for anything else.
  def parse_foo(body)
    data = JSON.parse(body)
    data[KEY] if data.is_a?(Hash) && data[KEY].is_a?(String)
  rescue JSON::ParserError
    nil
  end

  # This thread's client, made in this process. Thread variables, not Thread#[] (which is per
  # fiber), so a server that runs each request in a fiber still reuses one connection.
  def redis
    owner, client = Thread.current.thread_variable_get(@local_key)
    pid = Process.pid
    return client if owner == pid

    client = @config.new_client
    Thread.current.thread_variable_set(@local_key, [pid, client])
    client
  end

  def document(value)
    [200, JSON_HEADERS.dup, [JSON.generate(KEY => value)]]
  end

  def error(status, message, headers = {})
    [status, JSON_HEADERS.merge(headers), [JSON.generate("error" => message)]]
  end
end
