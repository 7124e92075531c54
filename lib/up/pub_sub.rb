# frozen_string_literal: true

require "monitor"
# Not on up_node, whose bundle compiles this file (Opal drops the branch): the engine speaks
# to Redis through Ruby sockets and threads, which Opal on Node does not have.
require_relative "pub_sub/redis" unless RUBY_ENGINE == "opal"

module Up
  # Pub/sub (docs/websockets.md, "PubSub" and "Engines"): where a publish goes, and
  # which engines hear of this process's subscriptions. Subscribing a client is Up::Client's
  # (ext/up/ruby/subscription.c); the fan-out to this process's subscribers is the engine's,
  # in C (Up::Server#publish_local).
  #
  # An engine answers publish(channel, message), subscribe(channel, match) and
  # unsubscribe(channel, match); match is nil for a channel, :glob for a pattern. The built-in
  # ones: CLUSTER (the default: every worker of this server) and PROCESS (this process only).
  # Engines that carry messages between servers (Up::PubSub::Redis) are attached: they are told
  # of every channel this process subscribes to, once (first subscriber in, last out), and
  # deliver what comes from their broker with Up.publish(channel, message, false).
  #
  # In a cluster, a worker's CLUSTER publish and its subscriptions go to the master through its
  # link (Up::Cluster), which fans publishes out to every worker and tells the attached
  # engines once per channel for the whole cluster.
  module PubSub
    # An engine that delivers to this process's subscribers only.
    class ProcessEngine
      def publish(channel, message)
        PubSub.deliver_here(channel, message)
      end

      def subscribe(_channel, _match); end

      def unsubscribe(_channel, _match); end

      def inspect
        "Up::PubSub::PROCESS"
      end
    end

    # The default engine: every worker of this server (this process, when it has no master).
    class ClusterEngine < ProcessEngine
      def publish(channel, message)
        link = PubSub.cluster_link
        link ? link.publish(channel, message) : super
      end

      def inspect
        "Up::PubSub::CLUSTER"
      end
    end

    PROCESS = ProcessEngine.new.freeze
    CLUSTER = ClusterEngine.new.freeze

    @lock = Monitor.new
    @engines = []
    @default = CLUSTER
    @servers = []
    @interest = Hash.new(0)
    # Changes of interest not yet told, oldest first: [channel, match, on]. The MRI binding
    # appends to it itself (ext/up/ruby/subscription.c), in the registry's order.
    @interest_changes = []
    # Held while changes are told: one thread at a time, in the list's order.
    @interest_order = Monitor.new
    @interest_telling = false
    @cluster_link = nil
    @inherited = 0

    class << self
      attr_reader :cluster_link

      def default
        @lock.synchronize { @default }
      end

      def default=(engine)
        check_engine(engine)
        @lock.synchronize { @default = engine }
        attach(engine) unless [CLUSTER, PROCESS].include?(engine)
      end

      # Tells engine of every channel subscribed to now, and of every one to come.
      def attach(engine)
        check_engine(engine)
        @lock.synchronize do
          next if @engines.include?(engine)

          @engines << engine
          @interest.each_key { |channel, match| safely { engine.subscribe(channel, match) } }
        end
        engine
      end

      def detach(engine)
        @lock.synchronize do
          @engines.delete(engine)
          @default = CLUSTER if @default.equal?(engine)
        end
        engine
      end

      # Subscribes engine again to every channel (after its broker lost them).
      def reset(engine)
        @lock.synchronize do
          @interest.each_key { |channel, match| safely { engine.subscribe(channel, match) } }
        end
        engine
      end

      # engine: nil for the default, false for this process only, or an engine.
      def publish(channel, message, engine = nil)
        raise TypeError, "a channel is a String, not #{channel.class}" unless channel.is_a?(String) || channel.is_a?(Symbol)
        raise TypeError, "a message is a String, not #{message.class}" unless message.is_a?(String)

        engine = engine.nil? ? default : engine == false ? PROCESS : engine
        link = @cluster_link
        number = link && !link.master? && engine_number(engine)
        # An attached engine publishes once for the cluster, in the master (which subscribed
        # it: its broker's echo of our own message is its to drop there).
        number ? link.engine_publish(number, channel.to_s, message) : engine.publish(channel.to_s, message)
        true
      end

      # Attached engines by number (1 and up), the same in a master and its forked workers;
      # nil for an engine a worker attached itself, which the master does not have.
      def engine_number(engine)
        i = @lock.synchronize { @engines.index(engine) }
        i && i < @inherited ? i + 1 : nil
      end

      # In a forked worker, first: the engines attached so far are the master's, which runs
      # them (these copies let go of their connections), and so is the interest counted so
      # far. The engines attached from now on (by an app loaded in the worker) are this
      # worker's own, told of its subscriptions and published to from here.
      def after_fork
        @lock.synchronize do
          @inherited = @engines.size
          @interest = Hash.new(0)
          @interest_changes.clear
          @interest_telling = false
          @engines.each { |e| safely { e.after_fork_in_child } if e.respond_to?(:after_fork_in_child) }
        end
      end

      def engine_at(number)
        @lock.synchronize { number.positive? ? @engines[number - 1] : nil }
      end

      # A subscription of this process's, run on an app thread of one of its servers.
      def subscribe(channel, match: nil, &block)
        raise ArgumentError, "Up.subscribe needs a block" unless block
        raise ArgumentError, "match: must be :glob or nil" unless match.nil? || match == :glob

        server = @lock.synchronize { @servers.first } or
          raise "no server runs in this process yet: subscribe from the app (or a hook) once it serves"
        server.subscribe(channel.to_s, match == :glob, &block)
      end

      # Fans out to this process's subscribers, on every server it runs (the master has none:
      # there, it goes to every worker).
      def deliver_here(channel, message)
        link = @cluster_link
        return link.deliver_all(channel, message) if link&.master?

        @lock.synchronize { @servers.dup }.each { |server| server.publish_local(channel, message) }
      end

      # The binding of up_node and up (opal/up/node/subscription.rb): a server's first
      # subscription to (channel, match) came (on), or its last went. On one JS thread, nothing
      # runs between its registry change and this call.
      def interest(channel, match, on)
        @interest_changes << [channel, match, on]
        interest_changed
      end

      # Tells what @interest_changes holds, in its order, and returns once this thread's own
      # change is told. The MRI binding appends there before it calls this, so between a
      # registry change and its turn here any thread may run, and its change may be told by
      # another thread, never out of order: a worker that ends a channel's last subscription
      # while another thread makes a new first one tells its master "off" then "on", never the
      # reverse (the master would then count no subscriber here, and its engines would leave
      # the channel). Counts for this process over all its servers; when its first comes or its
      # last goes, a worker tells its master, which counts for the cluster and tells the
      # master's engines, and the engines this process attached itself hear of it.
      #
      # An engine told here may subscribe or unsubscribe in turn, on this thread: that change
      # waits for the one being told, and is told after it by this same loop.
      def interest_changed
        @interest_order.synchronize do
          next if @interest_telling

          @interest_telling = true
          begin
            tell_interest(*@interest_changes.shift) until @interest_changes.empty?
          ensure
            @interest_telling = false
          end
        end
      end

      # The master's: interest over the whole cluster (or this process).
      def cluster_interest(channel, match, on)
        count_interest(channel, match, on, 0)
      end

      # For the control endpoint: the channels heard of and each attached engine's own stats
      # (a Redis engine's reconnects, messages dropped while it was down).
      def stats
        @lock.synchronize do
          { channels: @interest.size,
            engines: @engines.map { |e| { engine: e.class.name }.merge(e.respond_to?(:stats) ? e.stats : {}) } }
        end
      end

      def cluster_link=(link)
        @lock.synchronize { @cluster_link = link }
      end

      def server_started(server)
        @lock.synchronize { @servers << server }
      end

      def server_stopped(server)
        @lock.synchronize { @servers.delete(server) }
      end

      private

      def tell_interest(channel, match, on)
        link = @cluster_link
        worker = link && !link.master?
        return unless count_interest(channel, match, on, worker ? @inherited : 0)

        link.interest(channel, match, on) if worker
      end

      # Counts interest in (channel, match) and tells the engines from the first'th on when it
      # begins or ends. Returns true then.
      def count_interest(channel, match, on, first)
        key = [channel, match]
        @lock.synchronize do
          if on
            @interest[key] += 1
            next false unless @interest[key] == 1

            @engines.drop(first).each { |e| safely { e.subscribe(channel, match) } }
            true
          elsif @interest.key?(key)
            @interest[key] -= 1
            next false if @interest[key].positive?

            @interest.delete(key)
            @engines.drop(first).each { |e| safely { e.unsubscribe(channel, match) } }
            true
          else
            false
          end
        end
      end

      def check_engine(engine)
        return if %i[publish subscribe unsubscribe].all? { |m| engine.respond_to?(m) }

        raise ArgumentError, "a pub/sub engine answers publish, subscribe and unsubscribe"
      end

      # An engine must not raise (the reference); one that does is logged, not fatal.
      def safely
        yield
      rescue StandardError => e
        warn "up: pub/sub engine: #{e.class}: #{e.message}"
      end
    end
  end

  def self.publish(channel, message, engine = nil)
    PubSub.publish(channel, message, engine)
  end

  def self.subscribe(channel, match: nil, &block)
    PubSub.subscribe(channel, match: match, &block)
  end

  def self.unsubscribe(subscription)
    subscription.cancel
  end
end
