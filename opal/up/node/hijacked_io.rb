# frozen_string_literal: true
# backtick_javascript: true

module Up
  module Node
    # The connection an app took with rack.hijack on `up` (a full hijack's return value, the
    # stream a partial hijack's callable gets): an IO over a HijackedSocket
    # (node/up/hijack.js), which holds the socket's fd once the engine has handed it over.
    # Exchange#fullHijack and Up::Node::Responder make one per hijack; the app owns it and
    # closes it (the fd closes then, once what was written is out).
    #
    # Writes are queued to the socket at once (before the hand-over, they wait for it, in
    # order), as the streaming body's Stream writes. Reads cannot wait on Node's one thread,
    # so they return what has arrived: read and read_nonblock take the bytes there are, and
    # #on_readable (not in the SPEC) runs a block each time more arrive or the client ends, to
    # read them then. Strings read are binary.
    class HijackedIO < ::IO
      def initialize(socket)
        super(nil, "r+")
        @socket = socket
      end

      # Runs block (again and again) when bytes arrive or the client ends, until #close_read
      # or #close; at once (on a later tick) when some wait already. What it raises closes the
      # connection and goes on to the process, which logs it (node/up/serve.js).
      def on_readable(&block)
        io = self
        callback = lambda do
          block.call(io)
        rescue ::Exception
          io.close
          raise
        end
        `#{@socket}.setOnReadable(#{callback})`
        self
      end

      # What has arrived, at most length bytes: "" when nothing has yet (and length is not 0),
      # nil once the client has ended and everything was read. (IO#read would wait; read() at
      # the end is nil here, so that an app can tell the end from nothing yet.)
      def read(length = nil, _buffer = nil)
        check_readable
        raise ArgumentError, "negative length #{length} given" if length&.negative?
        return binary("") if length&.zero?

        data = `#{@socket}.take(#{length.nil? ? -1 : length})`
        `#{data} === null` ? nil : binary(data)
      end

      # IO#read_nonblock: up to maxlen bytes that have arrived; when none have, Errno::EAGAIN
      # (:wait_readable with exception: false); at the end EOFError (nil).
      def read_nonblock(maxlen, _buffer = nil, exception: true)
        check_readable
        data = `#{@socket}.take(#{maxlen})`
        if `#{data} === null`
          raise EOFError, "end of file reached" if exception

          return nil
        end
        return binary(data) unless data.empty?
        raise ::Errno::EAGAIN, "read would block" if exception

        :wait_readable
      end

      # Opal's IO reads through sysread: here the bytes there are, EOFError at the end, and
      # Errno::EAGAIN rather than a wait when none came yet.
      def sysread(length)
        read_nonblock(length)
      end

      def readpartial(length, _buffer = nil)
        read_nonblock(length)
      end

      # A whole line if one has arrived (the rest at the end), else nil: see #eof? to tell the
      # end from a line not whole yet.
      def gets(separator = $/, _limit = nil)
        check_readable
        return (`#{@socket}.ended` ? read : nil) if separator.nil?

        line = `#{@socket}.takeLine(#{separator})`
        `#{line} === null` ? nil : binary(line)
      end

      def eof?
        `#{@socket}.atEnd()`
      end
      alias eof eof?

      # Returns the bytes queued. Errno::EPIPE once the client is gone.
      def write(*strings)
        check_writable
        strings.sum do |string|
          string = string.to_s
          bytes = `#{@socket}.write(#{string})`
          raise ::Errno::EPIPE, "the client closed the connection" if bytes.negative?

          bytes
        end
      end

      def write_nonblock(string, exception: true)
        _ = exception # never full: Node queues what the socket does not take yet
        write(string)
      end

      def flush
        self
      end

      def sync
        true
      end

      def to_io
        self
      end

      # The socket's descriptor once the engine handed it over, else nil.
      def fileno
        fd = `#{@socket}.fd`
        fd.negative? ? nil : fd
      end

      def close_read
        return if closed_read?

        `#{@socket}.closeRead()`
        super
        close_socket if closed?
        nil
      end

      def close_write
        return if closed_write?

        `#{@socket}.closeWrite()`
        super
        close_socket if closed?
        nil
      end

      def close
        return if closed?

        super
        close_socket
        nil
      end

      def inspect
        "#<#{self.class} fd #{fileno.inspect}#{closed? ? " (closed)" : ""}>"
      end

      private

      def close_socket
        `#{@socket}.close()`
      end

      # As Up::Node::Input's: bytes, one char a byte, and Opal counts them so.
      def binary(string)
        `Opal.enc(#{string}, "binary")`
      end
    end
  end
end
