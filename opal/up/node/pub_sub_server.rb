# frozen_string_literal: true
# backtick_javascript: true

require "up/node/subscription"

module Up
  module Node
    # The process's pub/sub as lib/up/pub_sub.rb sees a server (up_ruby's Up::Server#publish_local
    # and #subscribe): what reaches this process goes to its subscribers through
    # node/up_node/pubsub.js, and Up.subscribe subscribes the process itself, its blocks run by
    # pubsub.js like a client's. node/up_node/worker.js makes one per serving process and
    # registers it with Up::PubSub.server_started.
    class PubSubServer
      # pubsub: the JS PubSub. log: the JS Log.
      def initialize(pubsub, log)
        @pubsub = pubsub
        @log = log
        # What pubsub.js keeps the process's own subscriptions on; it is never closed.
        @owner = `{ subscriptions: null, isOpen: function() { return true; } }`
      end

      # To this process's subscribers only (a cluster's fan-out is the link's).
      def publish_local(channel, message)
        `#{@pubsub}.publish(#{channel}, #{message})`
        true
      end

      # Up.subscribe's: one subscription per channel for the process, as up_ruby's server
      # client has (subscribing again replaces it).
      def subscribe(channel, pattern, &block)
        Subscription.subscribe(@pubsub, @owner, self, channel, pattern, "block", block)
      end

      # A block of the process's own subscriptions raised.
      def report(error)
        `#{@log}.line(#{"error in an Up.subscribe block: #{Node.describe(error)}"})`
      end
    end
  end
end
