# frozen_string_literal: true
# backtick_javascript: true

module Up
  module Node
    # --redis-url's pub/sub engine on up_node and up, as lib/up/pub_sub.rb sees an engine
    # (subscribe, unsubscribe, publish; up_ruby's is Up::PubSub::Redis): a thin front for
    # node/up_node/redis_pubsub.js, which talks to Redis. attachRedis there makes one with
    # .install in the process that runs the cluster's pub/sub; a cluster worker whose primary
    # runs it gets a stand-in (js nil) at the same place in the engine list, which is never
    # called: the worker's publishes through it go to the primary's (Up::PubSub.engine_number)
    # and its subscriptions are counted there.
    class RedisEngine
      # Makes an engine over js the default, unless the app chose another default already
      # (then it is attached beside it, and hears of every subscription all the same).
      def self.install(js)
        engine = new(js)
        if PubSub.default.equal?(PubSub::CLUSTER)
          PubSub.default = engine
        else
          PubSub.attach(engine)
        end
        engine
      end

      def initialize(js)
        @js = js
      end

      def subscribe(channel, match = nil)
        `#{@js}.subscribe(#{channel}, #{match == :glob})` if @js
        nil
      end

      def unsubscribe(channel, match = nil)
        `#{@js}.unsubscribe(#{channel}, #{match == :glob})` if @js
        nil
      end

      # Queued for the other servers, and delivered to this server's subscribers at once (as
      # up_ruby's: the very objects, without a round trip to Redis). True when queued.
      def publish(channel, message)
        return false unless @js

        queued = `#{@js}.publish(#{channel}, #{message})`
        Up.publish(channel, message, false)
        queued
      end

      def stats
        @js ? `Opal.hash(#{@js}.stats())` : {}
      end
    end
  end
end
