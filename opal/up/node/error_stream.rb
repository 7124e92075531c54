# frozen_string_literal: true
# backtick_javascript: true

module Up
  module Node
    # rack.errors: what the app writes goes to the server log as it is, as up_ruby's
    # rack.errors is the log file. One per process (node/up_node/worker.js), shared by every
    # env; it owns nothing, the JS Log owns the file.
    class ErrorStream
      # log: the JS Log (node/up_node/log.js).
      def initialize(log)
        @log = log
      end

      def write(*strings)
        text = strings.join
        `#{@log}.write(#{text})`
        text.length
      end

      def puts(*lines)
        lines = [""] if lines.empty?
        write(lines.flatten.map { |line| line.to_s.end_with?("\n") ? line.to_s : "#{line}\n" }.join)
        nil
      end

      def print(*strings)
        write(*strings.map(&:to_s))
        nil
      end

      def <<(string)
        write(string.to_s)
        self
      end

      def flush
        self
      end

      def sync
        true
      end

      # Env dumps show it; the JS Log inside has no Ruby inspect.
      def inspect
        "#<#{self.class}>"
      end
    end
  end
end
