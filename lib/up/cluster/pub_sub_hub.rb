# frozen_string_literal: true

require_relative "../pub_sub/link_frame"

module Up
  class Cluster < Runner
    # The master's end of pub/sub (docs/websockets.md, "Delivery"): it reads each
    # worker's link (Up::PubSub::LinkFrame) and fans a CLUSTER publish out to every worker, in
    # the order each worker sent them, so each subscriber anywhere gets it exactly once; it
    # hands a publish through an attached engine to that engine here, once for the cluster;
    # and it counts first and last subscriptions over every worker, so engines subscribe once
    # per channel for the whole cluster. Up::Cluster makes it before the first fork and sets it
    # as Up::PubSub.cluster_link; the links themselves belong to the workers' handles.
    #
    # A worker that does not read its link (stuck) is not waited for: what it has not taken
    # waits in a buffer of its handle up to MAX_BUFFER bytes, past which messages for it are
    # dropped, counted and logged.
    class PubSubHub
      MAX_BUFFER = 16 * 1024 * 1024

      attr_reader :dropped

      def initialize(handles, log)
        @handles = handles # the master's live list
        @log = log
        @dropped = 0
        @lock = Mutex.new # an engine's thread delivers too (Up.publish(..., false) in the master)
      end

      def master?
        true
      end

      def publish(channel, message)
        deliver_all(channel, message)
      end

      # From the master's loop and from an engine's thread: the master's loop adds and removes
      # handles meanwhile, so this walks a copy (a live list that shrinks under a walk skips
      # the handle after the one removed); a handle reaped since has no link.
      def deliver_all(channel, message)
        frame = PubSub::LinkFrame.pack("D", channel, message)
        @lock.synchronize do
          @handles.dup.each { |h| queue(h, frame) if h.link }
        end
        true
      end

      # The master's loop found handle's link readable.
      def read(handle)
        data = handle.link.read_nonblock(65_536, exception: false)
        return if data == :wait_readable
        return forget(handle) if data.nil?

        handle.link_frames.feed(data) { |frame| on_frame(handle, frame) }
      rescue ArgumentError, SystemCallError, IOError => e
        @log.call("pub/sub link of worker #{handle.index} broke: #{e.message}")
        forget(handle)
      end

      # The master's loop found handle's link writable (it had output waiting).
      def flush(handle)
        @lock.synchronize { write_some(handle) }
      end

      # The master reaped handle's worker (or its link ended). What the worker wrote before it
      # died is still read: its publishes are for the other workers and the engines, and the
      # master's loop may not have read them yet (a worker that publishes, then exits between
      # the loop's wait and its reap). Then its subscriptions go with it: the first-in/last-out
      # counts drop what it held, and whatever still waits to be written to it (messages for its
      # own subscribers, gone with it) is let go, not counted as dropped.
      def worker_gone(handle)
        last_words(handle)
        forget(handle)
      end

      private

      # Reads what is left on a gone worker's link, at most MAX_BUFFER bytes (its end may live
      # on in a process it forked, which could write on). Its publishes go out; its changes of
      # interest are skipped, as worker_gone ends all it held.
      def last_words(handle)
        taken = 0
        while handle.link && taken < MAX_BUFFER
          data = handle.link.read_nonblock(65_536, exception: false)
          break if data == :wait_readable || data.nil?

          taken += data.bytesize
          handle.link_frames.feed(data) { |frame| on_frame(handle, frame) unless frame.type == "I" }
        end
      rescue ArgumentError, SystemCallError, IOError => e
        @log.call("pub/sub link of worker #{handle.index} broke: #{e.message}")
      end

      # The link closes under the lock: an engine's thread may be writing to it.
      def forget(handle)
        handle.link_interests.each { |channel, match| PubSub.cluster_interest(channel, match, false) }
        handle.link_interests.clear
        @lock.synchronize { handle.close_link }
      end

      def on_frame(handle, frame)
        channel = text(frame.a)
        case frame.type
        when "P" then deliver_all(channel, frame.b)
        when "E" then PubSub.engine_at(frame.engine)&.publish(channel, text(frame.b))
        when "I" then interest(handle, channel, frame.flags)
        end
      end

      def interest(handle, channel, flags)
        match = flags & 2 != 0 ? :glob : nil
        on = flags & 1 != 0
        key = [channel, match]
        return if on == handle.link_interests.include?(key)

        on ? handle.link_interests << key : handle.link_interests.delete(key)
        PubSub.cluster_interest(channel, match, on)
      end

      # UTF-8 when it is, bytes otherwise: what the worker's binding gives Ruby too.
      def text(bytes)
        str = bytes.dup.force_encoding(Encoding::UTF_8)
        str.valid_encoding? ? str : bytes
      end

      def queue(handle, frame)
        if handle.link_out.bytesize + frame.bytesize > MAX_BUFFER
          @dropped += 1
          @log.call("worker #{handle.index} is not reading pub/sub messages: #{@dropped} dropped") if (@dropped & (@dropped - 1)).zero?
          return
        end
        handle.link_out << frame
        write_some(handle)
      end

      def write_some(handle)
        return if handle.link_out.empty? || handle.link.nil?

        n = handle.link.write_nonblock(handle.link_out, exception: false)
        handle.link_out.slice!(0, n) if n.is_a?(Integer)
      rescue IOError, SystemCallError
        handle.link_out.clear
      end
    end
  end
end
