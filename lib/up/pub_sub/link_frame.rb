# frozen_string_literal: true

module Up
  module PubSub
    # The frames a cluster's workers and its master exchange over each worker's pub/sub link
    # (a socketpair made at the fork): a type byte, a flags byte, an engine number (2 bytes),
    # then two lengths (4 bytes each) and their bytes. Up::PubSub::WorkerLink writes and reads
    # them in a worker, Up::Cluster::PubSubHub in the master.
    #
    #   P  channel, message   worker → master: publish to every worker (CLUSTER)
    #   E  channel, message   worker → master: publish through attached engine number N
    #   I  channel, ""        worker → master: first subscription here (flags bit 0), or last
    #                         gone; flags bit 1: a pattern
    #   D  channel, message   master → worker: deliver to this worker's subscribers
    module LinkFrame
      HEADER = "aCnNN"
      HEADER_SIZE = 12
      # A frame past this is not ours (a message is bounded by what a client may send).
      MAX_FRAME = 1 << 30

      Frame = Struct.new(:type, :flags, :engine, :a, :b)

      def self.pack(type, a, b = "", flags: 0, engine: 0)
        [type, flags, engine, a.bytesize, b.bytesize].pack(HEADER) << a.b << b.b
      end

      # Takes bytes as they come and yields whole frames.
      class Reader
        def initialize
          @buffer = +"".b
        end

        def feed(bytes)
          @buffer << bytes
          while @buffer.bytesize >= HEADER_SIZE
            type, flags, engine, a_len, b_len = @buffer.unpack(HEADER)
            size = HEADER_SIZE + a_len + b_len
            raise ArgumentError, "pub/sub link frame of #{size} bytes" if size > MAX_FRAME
            break if @buffer.bytesize < size

            frame = @buffer.slice!(0, size)
            yield Frame.new(type, flags, engine, frame.byteslice(HEADER_SIZE, a_len),
                            frame.byteslice(HEADER_SIZE + a_len, b_len))
          end
        end
      end
    end
  end
end
