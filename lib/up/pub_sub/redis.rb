# frozen_string_literal: true

require_relative "resp"
require_relative "redis/address"
require_relative "redis/connection"
require_relative "redis/echo_filter"

module Up
  module PubSub
    # A pub/sub engine that carries messages between servers through a Redis server (RESP2 over
    # TCP or a Unix socket; no gem). Created by the app or --redis-url in the process that owns
    # the cluster's pub/sub (the master), which calls subscribe/unsubscribe once per channel or
    # pattern for the whole cluster and publish for every message. It owns two connections,
    # two threads and a bounded queue:
    #
    # - the subscriber connection, read by the reader thread, which also (re)connects both
    #   connections with back-off and hands what arrives to deliver (a callable given to new;
    #   the master's fans the message out to its workers). Its reads wait at most POLL at a
    #   time, so #close is noticed within that.
    # - the publisher connection (a RESP2 subscriber connection cannot PUBLISH), written by the
    #   writer thread from the queue in batches; the writer also sends the (un)subscriptions
    #   and PINGs on the subscriber connection. #publish only appends to the queue: it never
    #   waits for the network.
    #
    # Nothing raises into the caller after new (which raises ArgumentError for a bad URL):
    # failures go to logger, one line each, repeated ones at most once per LOG_INTERVAL.
    #
    # == Local delivery and echoes (exact, not a guess)
    #
    # publish(channel, message) calls deliver(channel, message) at once for this server's
    # subscribers and queues a PUBLISH for the others. Redis sends every PUBLISH it executes
    # back to our subscriber connection once per subscription of ours that matches it (a
    # "message" for the channel, a "pmessage" per matching pattern), back to back: a group.
    # The first copy of a group goes to deliver and the rest are dropped, since the cluster's
    # fan-out matches subscribers itself; a group that echoes one of our own PUBLISHes is
    # dropped whole. Which groups are echoes:
    #
    # 1. The writer never lets a PUBLISH and a subscription change be in flight together: it
    #    sends (un)subscriptions only when every PUBLISH it wrote is answered, and writes a
    #    PUBLISH only when every (un)subscription it sent is confirmed. So when Redis executes
    #    one of our PUBLISHes, our subscriptions there are exactly those last confirmed, and
    #    they stay the same until the next confirmation arrives on the same stream as the
    #    messages: an epoch.
    # 2. Before writing PUBLISH number n of message m on channel c, the writer records the
    #    expectation (c, m, n) if in this epoch we subscribe to c or to any pattern (otherwise
    #    no echo can come; then nothing is recorded, and no PING is sent for it).
    # 3. A group for (c, m) that starts while an expectation (c, m) is recorded is an echo: it
    #    is dropped and the oldest such expectation is removed. Any other group is delivered.
    # 4. Expectations also end (the echo, if any, has already come): all of them at the next
    #    subscription confirmation (1: their PUBLISHes were answered before the change was
    #    sent); those up to n at the pong of the "PING up-pubsub:n" that the writer sends once
    #    PUBLISH n was answered; the same at the error Redis may send instead of either reply;
    #    all of them when the subscriber connection is lost.
    #
    # Why exact: in an epoch, whether a PUBLISH to c produces a group depends only on c. If a
    # group (c, m) arrives while our expectation (c, m) is recorded, our own PUBLISH is echoed
    # in that epoch too, exactly once; if none does, ours was not echoed and the expectation
    # expires unused. Another server's identical (c, m) may take our expectation first; then
    # our own echo is delivered in its place: the same bytes, delivered once for each other
    # server's PUBLISH. Edge cases: a channel matched by its name and by patterns is one group,
    # dropped or delivered once; the same message published twice in a row by another server
    # is two groups (a subscription seen twice starts a new group); a (un)subscription while
    # messages are published pauses publishing for one round trip to Redis (1); an echo that
    # never comes (unsubscribed meanwhile) expires by 4. Expectations are bounded: the writer
    # takes no batch while MAX_PENDING_MESSAGES of them, or MAX_PENDING_BYTES of their
    # messages, are kept (a reader fallen behind), and the queue absorbs the wait.
    #
    # == Reconnection, buffering, drops
    #
    # A lost or unresponsive Redis (no reply within REPLY_TIMEOUT, no connection within
    # CONNECT_TIMEOUT) is reconnected after BACKOFF_FIRST, doubling up to BACKOFF_MAX (with
    # jitter, so that servers do not all come back at the same instant), and on the new
    # connection every current subscription, channels and patterns, is sent again before the
    # queue is published in order. The queue holds what was published while Redis was down or
    # behind, up to MAX_PENDING_MESSAGES and MAX_PENDING_BYTES (one message larger than that
    # is taken when the queue is empty); past that a message is dropped, counted in
    # stats[:dropped] and logged. Delivery through Redis is at most once: a batch written
    # when the connection broke may or may not have reached Redis; it is not sent again but
    # counted as dropped and logged. PUBLISH errors (a read-only replica) count as dropped too.
    #
    # == Encodings
    #
    # Channel names and messages are any bytes. deliver gets this server's own messages as
    # published (the very objects), and those from Redis as new Strings tagged UTF-8 when the
    # bytes are valid UTF-8, else binary (ASCII-8BIT): Redis keeps no encoding.
    class Redis
      # The queue (messages waiting for Redis): enough for a few seconds of a busy chat while
      # Redis restarts, and at most this much memory in the master. The count bounds
      # per-message overhead, the bytes the payloads; 16 MiB is also the default --max-msg.
      MAX_PENDING_MESSAGES = 10_000
      MAX_PENDING_BYTES = 16 * 1024 * 1024
      # One write of PUBLISH commands, answered before the next.
      BATCH_MESSAGES = 512
      BATCH_BYTES = 1024 * 1024
      # Names per SUBSCRIBE, PSUBSCRIBE, UNSUBSCRIBE or PUNSUBSCRIBE command when restoring.
      MAX_NAMES_PER_COMMAND = 1_000
      # Reconnection delays: a restarted Redis is usually back within the first few tries, and
      # a long outage costs one attempt per BACKOFF_MAX seconds.
      BACKOFF_FIRST = 0.05
      BACKOFF_MAX = 5.0
      # Connecting and the handshake (AUTH, PING) of both connections.
      CONNECT_TIMEOUT = 2.0
      # A reply awaited longer than this (a stopped or wedged Redis) breaks the connection.
      # Longer than the pauses a healthy Redis makes (a fork for BGSAVE, a big DEL).
      REPLY_TIMEOUT = 5.0
      # A connection without traffic for this long is PINGed, which finds a dead peer within
      # IDLE_PING + REPLY_TIMEOUT and keeps the publisher's connection from Redis's `timeout`.
      IDLE_PING = 15.0
      # How long the reader waits on the socket before it looks at the engine's state again.
      POLL = Connection::WAIT_SLICE
      # Repeated log lines of one kind (cannot connect, dropped) at most this often.
      LOG_INTERVAL = 10.0
      # #close: how long the queue may take to drain to a connected Redis, and how long each
      # thread may take to stop before it is killed.
      CLOSE_FLUSH = 1.0
      CLOSE_JOIN = 2.0
      PING_PREFIX = "up-pubsub:"

      KINDS = { nil => :channel, glob: :pattern }.freeze
      SUBSCRIBE = { channel: "SUBSCRIBE", pattern: "PSUBSCRIBE" }.freeze
      UNSUBSCRIBE = { channel: "UNSUBSCRIBE", pattern: "PUNSUBSCRIBE" }.freeze
      CONFIRMATIONS = %w[subscribe psubscribe unsubscribe punsubscribe].freeze

      # url: redis://[[user]:password@]host[:port][/db] or unix:///path (see Address).
      # deliver: called with (channel, message) for each message this server's subscribers
      # get: from #publish's thread for our own, from the reader thread for other servers'.
      # By default Up.publish(channel, message, false), which fans out to this server.
      # logger: called with one line (a String) per event worth a log line.
      def initialize(url, deliver: nil, logger: ->(line) { $stderr.puts(line) })
        @address = Address.parse(url)
        @deliver = deliver || ->(channel, message) { Up.publish(channel, message, false) }
        @logger = logger
        @lock = Mutex.new
        @work = ConditionVariable.new  # the writer waits on it for something to send
        @idle = ConditionVariable.new  # back-off pauses and #close wait on it
        @log_lock = Mutex.new
        @logged_at = {}
        @suppressed = Hash.new(0)
        @queue = []                    # [channel, message], binary and frozen, oldest first
        @queue_bytes = 0
        @in_flight = 0                 # messages of the batch being written and answered
        @wanted = {}                   # subscription key => true: what the cluster subscribes to
        @wanted_changed = false
        @closing = false
        @cancelled = -> { @closing }
        @stats = { published: 0, received: 0, delivered_locally: 0, echoes: 0, reconnects: 0, dropped: 0 }
        @echoes = EchoFilter.new
        @seq = 0                       # number of the last PUBLISH taken for writing
        @acked_seq = 0                 # number of the last PUBLISH answered
        @generation = 0                # sessions started (a session: both connections up)
        @ever_connected = false
        clear_session
        @reader = Thread.new { run_thread("reader") { supervise } }
        @writer = Thread.new { run_thread("writer") { write_loop } }
      end

      # The cluster gained its first subscriber to channel (match nil) or to the pattern
      # channel (match :glob, Redis PSUBSCRIBE rules). Never raises.
      def subscribe(channel, match = nil)
        change_subscription(channel, match, true)
      end

      # The cluster's last subscriber to channel or pattern left. Never raises.
      def unsubscribe(channel, match = nil)
        change_subscription(channel, match, false)
      end

      # Delivers message to this server's subscribers at once and queues it for Redis. True
      # when queued; false when the queue is full (the message is dropped for the other
      # servers, counted and logged) or the engine is closed. Never raises, never waits for
      # the network. Call it from any thread.
      def publish(channel, message)
        unless channel.is_a?(String) && message.is_a?(String)
          log("publish(#{channel.class}, #{message.class}) ignored: channel and message must be Strings")
          return false
        end

        queued = enqueue(channel.b.freeze, message.b.freeze)
        call_deliver(channel, message)
        queued
      rescue StandardError => e
        log("publish failed: #{e.class}: #{e.message}")
        false
      end

      # Counters since new: published (answered by Redis), received (other servers' messages
      # delivered), delivered_locally (our own, delivered at publish), echoes (copies of our
      # own dropped), reconnects, dropped; and the state now: pending (queued), subscriptions
      # (confirmed by Redis on the current connection), connected.
      def stats
        @lock.synchronize do
          @stats.merge(pending: @queue.size, subscriptions: @subscribed, connected: @connected)
        end
      end

      # Sends what is queued if Redis is connected (waiting at most CLOSE_FLUSH), then stops
      # both threads and closes both connections. Messages still queued are dropped and counted.
      # Returns within CLOSE_FLUSH + CLOSE_JOIN seconds (+ one POLL); later calls do nothing.
      def close
        @lock.synchronize do
          return nil if @closing

          deadline = now + CLOSE_FLUSH
          while @connected && !@broken && (!@queue.empty? || @in_flight.positive?) && (left = deadline - now).positive?
            @idle.wait(@lock, left)
          end
          @closing = true
          @work.broadcast
          @idle.broadcast
        end
        [@reader, @writer].each do |thread|
          next if thread == Thread.current || thread.join(CLOSE_JOIN) # closed from deliver

          thread.kill
          thread.join(CLOSE_JOIN)
        end
        lost, conns = @lock.synchronize do
          lost = @queue.size
          @stats[:dropped] += lost
          @queue.clear
          @queue_bytes = 0
          conns = [@sub, @pub]
          clear_session
          [lost, conns]
        end
        conns.each { |conn| conn&.close }
        log("closed; #{lost} queued messages dropped") if lost.positive?
        nil
      end

      # For a process forked from the one that made the engine (a worker forked by the master):
      # closes this process's copies of the two sockets, so that a connection the parent drops
      # really closes (Redis would otherwise keep sending to a subscriber nobody reads), and
      # makes the copy inert (publish returns false). The parent's connections stay up. Takes
      # no lock: the parent's threads, which may have held it, do not exist here.
      def after_fork_in_child
        @closing = true
        [@sub, @pub].each { |conn| conn&.close }
        nil
      end

      private

      # ---- The caller's side --------------------------------------------------------------

      def change_subscription(channel, match, on)
        kind = KINDS[match]
        unless kind && channel.is_a?(String)
          log("#{on ? "subscribe" : "unsubscribe"}(#{channel.inspect}, #{match.inspect}) ignored: " \
              "the channel must be a String and match nil or :glob")
          return nil
        end

        key = [kind, channel.b.freeze]
        @lock.synchronize do
          break if on == @wanted.key?(key)

          on ? @wanted[key] = true : @wanted.delete(key)
          @wanted_changed = true
          @work.signal
        end
        nil
      rescue StandardError => e
        log("#{on ? "subscribe" : "unsubscribe"} failed: #{e.class}: #{e.message}")
        nil
      end

      def enqueue(channel, message)
        bytes = channel.bytesize + message.bytesize
        why = @lock.synchronize do
          @stats[:delivered_locally] += 1
          if @closing
            "the engine is closed"
          elsif @queue.size >= MAX_PENDING_MESSAGES || (!@queue.empty? && @queue_bytes + bytes > MAX_PENDING_BYTES)
            "#{@queue.size} messages (#{@queue_bytes} bytes) are waiting for Redis"
          else
            @queue << [channel, message]
            @queue_bytes += bytes
            @work.signal
            nil
          end.tap { |reason| @stats[:dropped] += 1 if reason }
        end
        return true unless why

        log_limited(:dropped, "message to #{channel.inspect} dropped: #{why}")
        false
      end

      def call_deliver(channel, message)
        @deliver.call(channel, message)
      rescue StandardError => e
        log_limited(:deliver, "deliver raised #{e.class}: #{e.message}")
      end

      # ---- The reader thread: connections, and what arrives on the subscriber's -----------

      # Connects, reads until the session ends, and again. After a session that lasted, the
      # next attempt is at once; after failed attempts and short sessions (a Redis that takes
      # the connection and drops it), the delay doubles.
      def supervise
        delay = BACKOFF_FIRST
        until closing?
          started = now
          if open_session
            begin
              read_session(@lock.synchronize { @sub })
            ensure
              end_session
            end
            if now - started >= BACKOFF_MAX
              delay = BACKOFF_FIRST
              next
            end
          end
          pause(delay * (0.8 + (0.4 * rand)))
          delay = [delay * 2, BACKOFF_MAX].min
        end
      end

      # Opens both connections; true when the session started.
      def open_session
        deadline = now + CONNECT_TIMEOUT
        sub = Connection.open(@address, deadline: deadline, cancelled: @cancelled)
        pub = Connection.open(@address, deadline: deadline, cancelled: @cancelled)
        start_session(sub, pub)
        true
      rescue Connection::Cancelled
        sub&.close
        false
      rescue StandardError => e
        sub&.close
        pending = @lock.synchronize { @queue.size }
        log_limited([:connect, e.class, e.message],
                    "cannot connect to #{@address}: #{e.message} (#{e.class}); #{pending} messages waiting; retrying")
        false
      end

      def start_session(sub, pub)
        line = @lock.synchronize do
          @generation += 1
          @sub = sub
          @pub = pub
          @connected = true
          @sub_sent_at = @pub_sent_at = now
          @wanted_changed = true
          reconnected = @ever_connected
          @ever_connected = true
          @stats[:reconnects] += 1 if reconnected
          @work.signal
          if reconnected
            "reconnected to #{@address}; restoring #{@wanted.size} subscriptions, publishing " \
              "#{@queue.size} waiting messages (#{@stats[:dropped]} dropped so far)"
          else
            "connected to #{@address}"
          end
        end
        log(line)
      end

      def read_session(sub)
        until closing?
          reply = sub.read(now + POLL)
          if reply.equal?(Connection::TIMEOUT)
            why = @lock.synchronize { @broken || stalled(sub) }
            if why
              log("#{why}; reconnecting")
              return
            end
          else
            handle(reply)
          end
        end
      rescue Connection::Cancelled
        nil
      rescue StandardError => e
        log("connection to #{@address} lost: #{e.message} (#{e.class}); reconnecting") unless closing?
      end

      # Why the subscriber connection counts as dead when nothing arrives, or nil. Under @lock.
      def stalled(sub)
        return nil unless @sub_waiting_since
        return nil if now - [@sub_waiting_since, sub.last_read_at].max < REPLY_TIMEOUT

        "no reply from #{@address} in #{REPLY_TIMEOUT} s"
      end

      def handle(reply)
        case reply
        in ["message", String => channel, String => message]
          on_copy([:channel, channel], channel, message)
        in ["pmessage", String => pattern, String => channel, String => message]
          on_copy([:pattern, pattern], channel, message)
        in [String => kind, String, Integer => count] if CONFIRMATIONS.include?(kind)
          on_confirmation(kind, count)
        in ["pong", String => arg]
          on_pong(arg)
        in String => arg # a PING's reply while nothing is subscribed
          on_pong(arg)
        in RESP::ErrorReply => error
          on_refusal(error)
        else
          raise Connection::Error, "unexpected reply #{reply.inspect[0, 200]}"
        end
      end

      def on_copy(subscription, channel, message)
        fate = @lock.synchronize do
          fate = @echoes.copy(subscription, channel, message)
          @stats[:received] += 1 if fate == :deliver
          @stats[:echoes] += 1 if fate == :echo
          @work.signal if fate == :echo # room for the writer if it waits on the expectations
          fate
        end
        call_deliver(text_or_binary(channel), text_or_binary(message)) if fate == :deliver
      end

      # One name of a (P)(UN)SUBSCRIBE done: rule 4 of the class comment.
      def on_confirmation(kind, count)
        @lock.synchronize do
          take_reply(kind.upcase)
          @awaiting -= 1
          @subscribed = count
          @echoes.subscriptions_changed
          @work.signal if @awaiting.zero?
        end
      end

      def on_pong(arg)
        raise Connection::Error, "unexpected reply #{arg.inspect[0, 200]}" unless arg.start_with?(PING_PREFIX)

        seq = Integer(arg.delete_prefix(PING_PREFIX), 10)
        @lock.synchronize do
          take_reply("PING")
          @echoes.pong(seq)
          @ping_seq = nil
          @work.signal
        end
      end

      # An error instead of the replies to our oldest command on the subscriber connection
      # (Redis 7 answers a SUBSCRIBE to channels the ACL user may not use with one NOPERM for
      # the whole command). Nothing changed in Redis; the expectations end as they would have
      # at the replies (the command was sent after the PUBLISHes they wait for were answered).
      def on_refusal(error)
        verb = @lock.synchronize do
          verb, left = @replies.shift
          raise Connection::Error, "unexpected error reply: #{error.message}" unless verb

          if verb == "PING"
            @echoes.pong(@ping_seq)
            @ping_seq = nil
          else
            @awaiting -= left
            @echoes.subscriptions_changed
          end
          @sub_waiting_since = nil if @replies.empty?
          @work.signal
          verb
        end
        log_limited([:refused, verb, error.message], "Redis refused #{verb}: #{error.message}")
      end

      # Counts one reply to the oldest command on the subscriber connection, which must be
      # verb's: Redis answers a connection's commands in order. Under @lock.
      def take_reply(verb)
        head = @replies.first
        raise Connection::Error, "a reply to #{verb} while #{head&.first || "nothing"} was awaited" unless head&.first == verb

        head[1] -= 1
        @replies.shift if head[1].zero?
        @sub_waiting_since = nil if @replies.empty?
      end

      def end_session
        conns = @lock.synchronize do
          conns = [@sub, @pub]
          clear_session
          @work.signal
          @idle.broadcast
          conns
        end
        conns.each { |conn| conn&.close }
      end

      # The state of one session, under @lock (or before the threads start).
      def clear_session
        @connected = false
        @broken = nil           # why the writer gave up on this session, for the reader
        @sub = nil
        @pub = nil
        @sent = {}              # the subscriptions sent on this session
        @sent_patterns = 0
        @awaiting = 0           # (un)subscriptions sent and not yet confirmed
        @replies = []           # [verb, replies left] per command on the subscriber connection
        @ping_seq = nil         # the PING in flight on the subscriber connection
        @sub_waiting_since = nil
        @subscribed = 0
        @echoes.reset
      end

      # ---- The writer thread ----------------------------------------------------------------

      def write_loop
        while (work = next_work)
          perform(*work)
        end
      end

      # The next thing to write, [type, generation, connection, payload], waiting until there is
      # one; nil when closing. The order makes rule 1 of the class comment: nothing is taken
      # while (un)subscriptions await confirmation, and they are sent only between batches.
      def next_work
        @lock.synchronize do
          loop do
            return nil if @closing

            wait = IDLE_PING
            if @connected && !@broken && @awaiting.zero?
              t = now
              if @wanted_changed && (commands = subscription_commands(t))
                return [:subscriptions, @generation, @sub, commands]
              end
              return [:ping, @generation, @sub, ping(t)] if ping_due?(t)
              if !@queue.empty? && @echoes.kept < MAX_PENDING_MESSAGES && @echoes.kept_bytes < MAX_PENDING_BYTES
                return [:publish, @generation, @pub, take_batch]
              end
              if t - @pub_sent_at >= IDLE_PING
                @pub_sent_at = t
                return [:keepalive, @generation, @pub, nil]
              end

              wait = IDLE_PING - (t - [@sub_sent_at, @pub_sent_at].min)
            end
            @work.wait(@lock, wait.clamp(POLL, IDLE_PING))
          end
        end
      end

      # The commands that bring Redis to @wanted, or nil when it is there. Under @lock.
      def subscription_commands(t)
        @wanted_changed = false
        added = @wanted.keys.reject { |key| @sent.key?(key) }
        removed = @sent.keys.reject { |key| @wanted.key?(key) }
        return nil if added.empty? && removed.empty?

        @sent = @wanted.dup
        @sent_patterns = @sent.count { |(kind, _), _| kind == :pattern }
        @awaiting = added.size + removed.size
        @sub_waiting_since ||= t
        @sub_sent_at = t
        commands = String.new(encoding: Encoding::BINARY)
        [[removed, UNSUBSCRIBE], [added, SUBSCRIBE]].each do |keys, verbs|
          keys.group_by(&:first).each do |kind, of_kind|
            of_kind.map(&:last).each_slice(MAX_NAMES_PER_COMMAND) do |names|
              commands << RESP.command(verbs.fetch(kind), *names)
              @replies << [verbs.fetch(kind), names.size]
            end
          end
        end
        commands
      end

      # A PING is due on the subscriber connection when answered PUBLISHes still have
      # expectations (rule 4), or when it has been idle. Under @lock.
      def ping_due?(t)
        return false if @ping_seq

        oldest = @echoes.oldest_seq
        (oldest && oldest <= @acked_seq) || t - @sub_sent_at >= IDLE_PING
      end

      def ping(t)
        @ping_seq = @acked_seq
        @replies << ["PING", 1]
        @sub_waiting_since ||= t
        @sub_sent_at = t
        RESP.command("PING", "#{PING_PREFIX}#{@acked_seq}")
      end

      # Up to BATCH_MESSAGES or BATCH_BYTES from the queue, each numbered and, when Redis can
      # echo it, expected back (rule 2). Under @lock.
      def take_batch
        batch = []
        bytes = 0
        while (entry = @queue.first) && batch.size < BATCH_MESSAGES
          size = entry[0].bytesize + entry[1].bytesize
          break if !batch.empty? && bytes + size > BATCH_BYTES

          @queue.shift
          bytes += size
          batch << entry
        end
        @queue_bytes -= bytes
        @in_flight = batch.size
        batch.each do |channel, message|
          @seq += 1
          @echoes.expect(@seq, channel, message) if @sent_patterns.positive? || @sent.key?([:channel, channel])
        end
        [batch, @seq]
      end

      def perform(type, generation, conn, payload)
        case type
        when :subscriptions, :ping then conn.write(payload, now + REPLY_TIMEOUT)
        when :publish then publish_batch(generation, conn, *payload)
        when :keepalive
          reply = conn.call(["PING"], now + REPLY_TIMEOUT)
          raise Connection::Error, "PING answered #{reply.inspect}" unless reply == "PONG"
        end
      rescue Connection::Cancelled
        nil
      rescue StandardError => e
        @lock.synchronize { @broken ||= "#{type} failed: #{e.message} (#{e.class})" if generation == @generation }
        log_limited(:write, "writing to #{@address} failed: #{e.message} (#{e.class})") unless closing?
      end

      # Writes the batch's PUBLISH commands at once and reads their replies. A batch cut short
      # by a broken connection is not sent again (at most once): what was not answered is
      # counted as dropped.
      def publish_batch(generation, conn, batch, last_seq)
        if conn.dead?
          requeue(batch)
          raise Connection::Error, "the publisher's connection was closed by Redis"
        end

        answered = refused = 0
        first_refusal = nil
        begin
          commands = String.new(encoding: Encoding::BINARY)
          batch.each { |channel, message| commands << RESP.command("PUBLISH", channel, message) }
          conn.write(commands, now + REPLY_TIMEOUT)
          batch.size.times do
            reply = conn.read(now + REPLY_TIMEOUT)
            raise Connection::Error, "no reply to PUBLISH in #{REPLY_TIMEOUT} s" if reply.equal?(Connection::TIMEOUT)

            if reply.is_a?(RESP::ErrorReply)
              refused += 1
              first_refusal ||= reply.message
            elsif !reply.is_a?(Integer)
              raise Connection::Error, "unexpected reply to PUBLISH #{reply.inspect[0, 200]}"
            end
            answered += 1
          end
        ensure
          unanswered = batch.size - answered
          @lock.synchronize do
            @stats[:published] += answered - refused
            @stats[:dropped] += refused + unanswered
            @acked_seq = last_seq if unanswered.zero? && generation == @generation
            @pub_sent_at = now
            @in_flight = 0
            @work.signal
            @idle.broadcast
          end
          if unanswered.positive? && !closing?
            log("#{unanswered} messages written to #{@address} got no reply and are not sent again " \
                "(counted as dropped: they may or may not have been published)")
          end
          log_limited(:refused, "Redis refused #{refused} PUBLISH: #{first_refusal}") if refused.positive?
        end
      end

      # Puts a batch that was not written back at the head of the queue, in order.
      def requeue(batch)
        @lock.synchronize do
          @queue.unshift(*batch)
          @queue_bytes += batch.sum { |channel, message| channel.bytesize + message.bytesize }
          @in_flight = 0
        end
      end

      # ---- Shared ---------------------------------------------------------------------------

      def closing?
        @closing
      end

      def now
        Process.clock_gettime(Process::CLOCK_MONOTONIC)
      end

      # Waits seconds, or less if the engine closes.
      def pause(seconds)
        deadline = now + seconds
        @lock.synchronize do
          while !@closing && (left = deadline - now).positive?
            @idle.wait(@lock, left)
          end
        end
      end

      def text_or_binary(bytes)
        text = bytes.dup.force_encoding(Encoding::UTF_8)
        text.valid_encoding? ? text : bytes.dup
      end

      # Runs a thread's loop; a bug in it is logged and the loop started again, so that the
      # engine goes on (the reader reconnects) rather than dying silently.
      def run_thread(name)
        Thread.current.name = "up-redis-#{name}"
        Thread.current.report_on_exception = false
        begin
          yield
        rescue StandardError => e
          log_limited(:bug, "#{name} thread: #{e.full_message(highlight: false)}")
          pause(BACKOFF_MAX)
          retry unless closing?
        end
      end

      def log(line)
        @logger.call("redis pub/sub: #{line}")
      rescue StandardError
        nil
      end

      # Logs the first line of a kind (any Hash key: a new reason for the same failure is a new
      # kind), then at most one per LOG_INTERVAL, saying how many were left out.
      def log_limited(kind, line)
        suppressed = @log_lock.synchronize do
          at = @logged_at[kind]
          if at && now - at < LOG_INTERVAL
            @suppressed[kind] += 1
            return
          end
          @logged_at[kind] = now
          @suppressed.delete(kind).to_i
        end
        log(suppressed.positive? ? "#{line} (#{suppressed} more like it not logged)" : line)
      end
    end
  end
end
