# frozen_string_literal: true
# backtick_javascript: true

module Up
  # One pub/sub subscription on up_node, as up_ruby's Up::Subscription
  # (ext/up/ruby/subscription.c): a client's (Up::Client#subscribe) or the process's own
  # (Up.subscribe, through Up::Node::PubSubServer). The subscriptions themselves and the fan-out
  # are node/up_node/pubsub.js's; this object is what the app holds, and runs the block of one
  # that has a block (pubsub.js calls #deliver). The class methods are the subscribing steps
  # that Client and PubSubServer share: the first subscription of this process to a channel
  # and the last one tell lib/up/pub_sub.rb (Up::PubSub.interest), which tells the engines.
  class Subscription
    attr_reader :channel

    class << self
      # match: :glob, or the draft's is_pattern as the second positional argument.
      def pattern?(is_pattern, match)
        raise ArgumentError, "match: must be :glob or nil, not #{match.inspect}" unless match.nil? || match == :glob

        match == :glob || (is_pattern ? true : false)
      end

      # owner: the JS connection (or PubSubServer's owner); client: who reports a block's errors.
      def subscribe(pubsub, owner, client, channel, pattern, delivery, block)
        sub = new(pubsub, owner, client, channel, pattern, block)
        replaced, first = `#{pubsub}.subscribe(#{owner}, #{channel}, #{pattern}, #{delivery}, #{sub})`
        replaced&.deactivate
        PubSub.interest(channel, pattern ? :glob : nil, true) if first
        sub
      end

      def unsubscribe(pubsub, owner, channel, pattern)
        sub, last = `#{pubsub}.unsubscribe(#{owner}, #{channel}, #{pattern})`
        ended(sub, last)
      end

      # Every subscription of owner ends (its connection closed).
      def end_all(pubsub, owner)
        `#{pubsub}.unsubscribeAll(#{owner})`.each { |sub, last| ended(sub, last) }
      end

      private

      def ended(sub, last)
        return if sub.nil?

        sub.deactivate
        PubSub.interest(sub.channel, sub.pattern? ? :glob : nil, false) if last
      end
    end

    def initialize(pubsub, owner, client, channel, pattern, block)
      @pubsub = pubsub
      @owner = owner
      @client = client
      @channel = channel
      @pattern = pattern
      @block = block
      @active = true
    end

    def pattern?
      @pattern
    end

    def active?
      @active
    end

    # Ends it, whoever holds it (one replaced or ended already is not its channel's any more).
    def cancel
      self.class.unsubscribe(@pubsub, @owner, @channel, @pattern) if @active
      nil
    end

    # ---- node/up_node/pubsub.js and the subscribing side

    def deactivate
      @active = false
    end

    # A message for a subscription with a block: the block runs (an unsubscribed one's last
    # messages are not for it).
    def deliver(channel, message)
      return unless @active

      @block.call(channel, message)
    rescue ::Exception => e # JS errors too
      @client.report(e)
    end
  end
end
