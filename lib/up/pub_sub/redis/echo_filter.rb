# frozen_string_literal: true

module Up
  module PubSub
    class Redis
      # Decides, for each message that arrives on the subscriber connection, whether it goes to
      # this server's subscribers: once per PUBLISH that Redis executed, never for a PUBLISH of
      # our own (those were delivered locally when published). The rule, and why it is exact,
      # is in Up::PubSub::Redis's class comment; this class only keeps the books. It does no
      # I/O and takes no lock: the engine calls it under its own lock, #expect from the writer
      # thread and everything else from the reader thread, in the order the replies arrive.
      #
      # A subscription is a key: [:channel, name] or [:pattern, name]. A group is the run of
      # copies one PUBLISH produced on our connection, one per subscription of ours that it
      # matched; Redis writes them back to back.
      class EchoFilter
        # Expectations live (not yet matched by a group nor expired).
        attr_reader :size
        # Expectations kept for expiry (live or matched), and the bytes of their messages.
        attr_reader :kept, :kept_bytes

        def initialize
          reset
        end

        # Forgets everything: a new subscriber connection shares no replies with the old one.
        def reset
          @expected = {}      # [channel, message] => seqs of our PUBLISHes awaited, oldest first
          @order = []         # [seq, [channel, message]] in seq order, until expired
          @size = 0
          @kept = 0
          @kept_bytes = 0
          end_group
        end

        # Our PUBLISH number seq of message on channel is about to be written, and Redis will
        # echo it back to us if any subscription of ours matches it (the caller registers only
        # then: while we have a subscription to that channel or any pattern at all).
        def expect(seq, channel, message)
          key = [channel, message]
          (@expected[key] ||= []) << seq
          @order << [seq, key]
          @size += 1
          @kept += 1
          @kept_bytes += channel.bytesize + message.bytesize
        end

        # One copy of a message, received through subscription. Returns :deliver (the first
        # copy of another server's PUBLISH), :echo (the first copy of one of ours, dropped) or
        # :repeat (a further copy of the same PUBLISH, dropped).
        def copy(subscription, channel, message)
          if @group_subscriptions && !@group_subscriptions.include?(subscription) &&
             @group_channel == channel && @group_message == message
            @group_subscriptions << subscription
            return :repeat
          end

          @group_subscriptions = [subscription]
          @group_channel = channel
          @group_message = message
          key = [channel, message]
          return :deliver unless @expected.key?(key)

          drop_oldest(key)
          :echo
        end

        # A reply that is not a message (a pong, a confirmation) ends the group: the next copy
        # comes from another PUBLISH.
        def end_group
          @group_subscriptions = nil
          @group_channel = nil
          @group_message = nil
        end

        # The pong of a PING that was written after the reply to our PUBLISH number seq: the
        # echoes of seq and before have all arrived, so their expectations go.
        def pong(seq)
          end_group
          expire { |s| s <= seq }
        end

        # A (un)subscription was confirmed. The writer sends one only when every PUBLISH it
        # wrote has been answered, so every echo of those arrived before this confirmation.
        def subscriptions_changed
          end_group
          expire { true }
        end

        # The seq of the oldest expectation kept, or nil.
        def oldest_seq
          @order.first&.first
        end

        private

        def expire
          while (entry = @order.first) && yield(entry[0])
            @order.shift
            seq, key = entry
            @kept -= 1
            @kept_bytes -= key[0].bytesize + key[1].bytesize
            drop_oldest(key) if @expected[key]&.first == seq
          end
        end

        # The oldest live expectation of key goes (seqs are kept oldest first).
        def drop_oldest(key)
          seqs = @expected[key]
          seqs.shift
          @expected.delete(key) if seqs.empty?
          @size -= 1
        end
      end
    end
  end
end
