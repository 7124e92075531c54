# frozen_string_literal: true
# backtick_javascript: true

module Up
  module Node
    # Up::PubSub.cluster_link on up_node (lib/up/pub_sub.rb talks to it as to up_ruby's
    # Up::PubSub::WorkerLink and Up::Cluster::PubSubHub): a worker's end sends its CLUSTER
    # publishes, its publishes through attached engines and its first and last subscriptions
    # to the primary; the primary's end (master?) fans a publish out to every worker. Both ends
    # are node/up_node/cluster_pubsub.js's, over node:cluster's IPC; worker.js and primary.js
    # make this one with them.
    class PubSubLink
      # js: cluster_pubsub.js's WorkerLink or Hub.
      def initialize(js, master)
        @js = js
        @master = master
      end

      def master?
        @master
      end

      def publish(channel, message)
        `#{@js}.publish(#{channel}, #{message})`
        true
      end

      def engine_publish(number, channel, message)
        `#{@js}.enginePublish(#{number}, #{channel}, #{message})`
        true
      end

      def interest(channel, match, on)
        `#{@js}.interest(#{channel}, #{!match.nil?}, #{on})`
      end

      def deliver_all(channel, message)
        `#{@js}.deliverAll(#{channel}, #{message})`
        true
      end
    end
  end
end
