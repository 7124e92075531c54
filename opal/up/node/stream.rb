# frozen_string_literal: true
# backtick_javascript: true

module Up
  module Node
    # The stream a streaming (callable) body is called with: what the app writes goes to the
    # client at once (chunked, unless the app set content-length), and #close ends the
    # response. Reads come from rack.input, which holds the whole request body already.
    # Up::Node::Responder makes one per streaming response; the app may keep it after its
    # call returns and write later (from a timer), until it closes it.
    class Stream
      def initialize(exchange, input)
        @exchange = exchange
        @input = input
        @closed = false
      end

      def write(data)
        raise IOError, "closed stream" if @closed

        string = data.to_s
        `#{@exchange}.write(#{string})` unless string.empty?
        string.length
      end

      def <<(data)
        write(data)
        self
      end

      def read(length = nil, buffer = nil)
        @input.read(length, buffer)
      end

      def flush
        self
      end

      def close_read
        nil
      end

      def close_write
        close
      end

      def close
        return if @closed

        @closed = true
        `#{@exchange}.end()`
        nil
      end

      def closed?
        @closed
      end
    end
  end
end
