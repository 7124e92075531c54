# frozen_string_literal: true

module Up
  module PubSub
    # RESP2, the protocol Redis speaks (https://redis.io/docs/latest/develop/reference/protocol-spec/):
    # RESP.command encodes a command, and an instance is a resumable reply parser. Bytes go in
    # with #feed as they arrive, in pieces of any size; #next_reply hands out one complete reply
    # at a time, or INCOMPLETE when the bytes so far end inside one. Nothing is scanned twice
    # except a partial line (at most MAX_LINE bytes): a bulk string waits for its declared
    # length, and a partial array keeps its elements on a stack. Up::PubSub::Redis::Connection
    # owns one per socket; the parser does no I/O.
    #
    # Replies: a simple string and a bulk string are binary (ASCII-8BIT) Strings, an error is an
    # ErrorReply, an integer an Integer, an array an Array, a null bulk string or null array
    # nil. Anything else, RESP3 types included (we never send HELLO 3), is a ProtocolError,
    # and so is every later call: after a malformed reply the stream cannot be trusted again.
    # Numbers are read as Redis writes them: an optional minus, no plus, no leading zero.
    class RESP
      # A reply Redis sent as "-message": returned, not raised, since it answers one command.
      ErrorReply = Struct.new(:message)
      # Bytes that are not RESP2.
      class ProtocolError < StandardError; end

      INCOMPLETE = :incomplete

      # The longest line (a simple string, error or number) we wait for the end of.
      MAX_LINE = 64 * 1024
      # Redis's own default proto-max-bulk-len.
      MAX_BULK = 512 * 1024 * 1024
      # Elements of one array; pub/sub replies have three or four.
      MAX_ELEMENTS = 1024 * 1024
      # Arrays inside arrays; pub/sub replies are flat.
      MAX_DEPTH = 16

      CRLF = "\r\n"
      INTEGER = /\A-?(?:0|[1-9][0-9]{0,18})\z/
      LENGTH = /\A(?:-1|0|[1-9][0-9]{0,9})\z/

      # The bytes of one command: an array of bulk strings. Arguments are Strings (any bytes)
      # or Integers.
      def self.command(*args)
        out = String.new("*#{args.size}\r\n", encoding: Encoding::BINARY)
        args.each do |arg|
          arg = arg.to_s if arg.is_a?(Integer)
          out << "$#{arg.bytesize}\r\n" << (arg.encoding == Encoding::BINARY ? arg : arg.b) << CRLF
        end
        out
      end

      def initialize
        @buf = String.new(encoding: Encoding::BINARY)
        @pos = 0          # the first byte not consumed
        @scanned = 0      # where the search for the end of a partial line goes on from
        @bulk = nil       # the length of the bulk string whose header was read, or nil
        @stack = []       # [elements so far, elements declared] per array being filled
        @failure = nil
      end

      # Appends bytes read from the socket.
      def feed(bytes)
        @buf << (bytes.encoding == Encoding::BINARY ? bytes : bytes.b)
        self
      end

      # Whether the bytes fed so far end inside a reply (its start is held for the rest).
      def mid_reply?
        @buf.bytesize > @pos || !@bulk.nil? || !@stack.empty?
      end

      # The next complete reply, or INCOMPLETE; raises ProtocolError.
      def next_reply
        raise ProtocolError, @failure if @failure

        loop do
          value = @bulk ? take_bulk : take_line
          return pause if value.equal?(INCOMPLETE)
          next if value.equal?(CONTINUE)

          value = place(value)
          next if value.equal?(CONTINUE)

          return value
        end
      end

      private

      # Marks a value that opened an array or a bulk string: nothing to hand out yet.
      CONTINUE = Object.new.freeze
      private_constant :CONTINUE

      # Before waiting for more bytes, moves what is left to the start of the buffer once (a
      # long bulk string arriving in pieces is then appended to, never copied again).
      def pause
        if @pos.positive?
          @buf = @buf.byteslice(@pos, @buf.bytesize - @pos)
          @scanned = [@scanned - @pos, 0].max
          @pos = 0
        end
        INCOMPLETE
      end

      def take_bulk
        return INCOMPLETE if @buf.bytesize - @pos < @bulk + 2

        value = @buf.byteslice(@pos, @bulk)
        fail!("bulk string of #{@bulk} bytes not followed by CRLF") unless @buf.byteslice(@pos + @bulk, 2) == CRLF
        @pos += @bulk + 2
        @bulk = nil
        value
      end

      def take_line
        lf = @buf.index("\n", [@pos, @scanned].max)
        unless lf
          fail!("line longer than #{MAX_LINE} bytes") if @buf.bytesize - @pos > MAX_LINE
          @scanned = @buf.bytesize
          return INCOMPLETE
        end
        fail!("bare LF") if lf == @pos || @buf.getbyte(lf - 1) != 13
        fail!("empty line") if lf == @pos + 1
        fail!("line longer than #{MAX_LINE} bytes") if lf - @pos > MAX_LINE

        type = @buf.getbyte(@pos)
        line = @buf.byteslice(@pos + 1, lf - @pos - 2)
        @pos = lf + 1
        fail!("bare CR") if line.include?("\r")
        line_value(type, line)
      end

      def line_value(type, line)
        case type
        when 43 then line                               # "+"
        when 45 then ErrorReply.new(line)               # "-"
        when 58 then integer(line)                      # ":"
        when 36 then bulk_header(length(line))          # "$"
        when 42 then array_header(length(line))         # "*"
        else fail!("unknown reply type #{type.chr.inspect}")
        end
      end

      def integer(line)
        fail!("bad integer #{line.inspect}") unless INTEGER.match?(line)
        value = Integer(line, 10)
        fail!("integer out of range #{line.inspect}") unless value.bit_length < 64
        value
      end

      def length(line)
        fail!("bad length #{line.inspect}") unless LENGTH.match?(line)
        Integer(line, 10)
      end

      def bulk_header(length)
        return nil if length == -1

        fail!("bulk string of #{length} bytes, above #{MAX_BULK}") if length > MAX_BULK
        @bulk = length
        CONTINUE
      end

      def array_header(length)
        return nil if length == -1
        return [] if length.zero?

        fail!("array of #{length} elements, above #{MAX_ELEMENTS}") if length > MAX_ELEMENTS
        fail!("arrays nested deeper than #{MAX_DEPTH}") if @stack.size >= MAX_DEPTH
        @stack.push([[], length])
        CONTINUE
      end

      # Puts a finished value into the array being filled, closing every array it completes;
      # returns the reply once the outermost is complete (or the value if there is no array).
      def place(value)
        while (top = @stack.last)
          top[0] << value
          return CONTINUE if top[0].size < top[1]

          value = @stack.pop[0]
        end
        value
      end

      def fail!(why)
        @failure = why
        raise ProtocolError, why
      end
    end
  end
end
