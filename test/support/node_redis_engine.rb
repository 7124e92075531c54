# frozen_string_literal: true

require "base64"
require "json"

# The Node runtimes' Redis engine (node/up_node/redis_pubsub.js) behind up_ruby's engine's
# Ruby interface (Up::PubSub::Redis: subscribe, unsubscribe, publish, stats, close), so that
# test/test_pubsub_redis.rb's wire tests run on both. A Host is one node process
# (test/support/redis_engine_node.js) running any number of engines, each an Engine here.
# As opal/up/node/redis_engine.rb does, Engine#publish delivers to the local subscribers
# itself, the very objects; what comes from Redis arrives as up_ruby's engine hands it: a
# UTF-8 String when the bytes are UTF-8, else binary.
module NodeRedisEngine
  SCRIPT = File.expand_path("redis_engine_node.js", __dir__)
  REPLY_TIMEOUT = 10

  class Host
    def initialize
      child_in, @to_child = IO.pipe
      @from_child, child_out = IO.pipe
      @pid = Process.spawn(ENV.fetch("UP_NODE", "node"), SCRIPT, in: child_in, out: child_out)
      child_in.close
      child_out.close
      @lock = Mutex.new
      @replied = ConditionVariable.new
      @replies = {}
      @seq = 0
      @engines = {}
      @reader = Thread.new { read_events }
    end

    def engine(url, deliver:, logger:)
      id = @lock.synchronize { @engines.size + 1 }
      engine = Engine.new(self, id, deliver, logger)
      @lock.synchronize { @engines[id] = engine }
      send_line(op: "new", id: id, url: url)
      engine
    end

    # A command without a reply.
    def tell(**command)
      send_line(**command)
    end

    # A command and its reply.
    def ask(**command)
      seq = @lock.synchronize { @seq += 1 }
      send_line(**command, seq: seq)
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + REPLY_TIMEOUT
      @lock.synchronize do
        until @replies.key?(seq)
          left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
          raise "no reply from #{SCRIPT} to #{command[:op]}" if left <= 0 || @dead

          @replied.wait(@lock, left)
        end
        @replies.delete(seq)
      end
    end

    def stop
      @to_child.close unless @to_child.closed?
      Process.kill(:KILL, @pid)
      Process.wait(@pid)
      @reader.join(5)
      @from_child.close
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    end

    private

    def send_line(**command)
      line = "#{JSON.generate(command)}\n"
      @lock.synchronize { @to_child.write(line) }
    end

    def read_events
      @from_child.each_line do |line|
        event = JSON.parse(line)
        case event["ev"]
        when "deliver" then engine_for(event).delivered(decode(event["channel"]), decode(event["message"]))
        when "log" then engine_for(event).logged(event["line"])
        when "reply"
          @lock.synchronize do
            @replies[event["seq"]] = event["value"]
            @replied.broadcast
          end
        end
      end
    ensure
      @lock.synchronize do
        @dead = true
        @replied.broadcast
      end
    end

    def engine_for(event)
      @lock.synchronize { @engines.fetch(event["id"]) }
    end

    def decode(base64)
      bytes = Base64.strict_decode64(base64)
      text = bytes.dup.force_encoding(Encoding::UTF_8)
      text.valid_encoding? ? text : bytes
    end
  end

  # One engine in the host, as one UP! server's.
  class Engine
    def initialize(host, id, deliver, logger)
      @host = host
      @id = id
      @deliver = deliver
      @logger = logger
    end

    def subscribe(channel, match = nil)
      @host.tell(op: "subscribe", id: @id, channel: Base64.strict_encode64(channel), pattern: match == :glob)
      nil
    end

    def unsubscribe(channel, match = nil)
      @host.tell(op: "unsubscribe", id: @id, channel: Base64.strict_encode64(channel), pattern: match == :glob)
      nil
    end

    def publish(channel, message)
      queued = @host.ask(op: "publish", id: @id, channel: Base64.strict_encode64(channel),
                         message: Base64.strict_encode64(message))
      @deliver.call(channel, message)
      queued
    end

    def stats
      @host.ask(op: "stats", id: @id).transform_keys(&:to_sym)
    end

    def close
      @host.ask(op: "close", id: @id)
      nil
    end

    def delivered(channel, message)
      @deliver.call(channel, message)
    end

    def logged(line)
      @logger.call(line)
    end
  end
end
