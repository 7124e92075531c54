# frozen_string_literal: true
# backtick_javascript: true

module Up
  module Node
    # rack.input over a request body that Node has already read: a binary String, one char
    # per byte. node/up_node/env.js makes one per request with a body (one shared empty one for
    # the rest, which reading cannot change). It owns the String and a read position, and
    # reads like IO: read, gets, each, rewind, eof?, size, close.
    #
    # Opal Strings are immutable, so read(length, buffer) cannot fill buffer in place: it
    # returns the bytes read as a new String, as callers that use the return value expect.
    class Input
      def initialize(data)
        @data = data
        @pos = 0
      end

      # IO#read: the rest (""), or up to length bytes (nil at the end; "" for length 0).
      # With a buffer made to change (`"".dup`), the data fills it, and it is returned, as
      # on MRI (Rack::RewindableInput reads so).
      def read(length = nil, buffer = nil)
        data = read_data(length)
        return data unless buffer && `#{buffer}.$$up_mutable === true`

        buffer.replace(data || "")
        data && buffer
      end

      private def read_data(length)
        if length.nil?
          rest = @data[@pos, @data.length] || ""
          @pos = @data.length
          return binary(rest)
        end
        raise ArgumentError, "negative length #{length} given" if length.negative?
        return binary("") if length.zero?
        return nil if @pos >= @data.length

        chunk = @data[@pos, length]
        @pos += chunk.length
        binary(chunk)
      end

      # IO#gets with a separator (nil for the rest); nil at the end.
      def gets(separator = "\n")
        return nil if @pos >= @data.length

        stop = separator && @data.index(separator, @pos)
        finish = stop ? stop + separator.length : @data.length
        line = @data[@pos...finish]
        @pos = finish
        binary(line)
      end

      def each
        while (line = gets)
          yield line
        end
        self
      end

      def rewind
        @pos = 0
      end

      def eof?
        @pos >= @data.length
      end

      def size
        @data.length
      end

      def close
        nil
      end

      # Short, as env dumps show it: never the body (which may be megabytes).
      def inspect
        "#<#{self.class} #{@data.length} bytes>"
      end

      private

      # String#b tags only the encoding, and Opal counts bytes by the internal encoding
      # (bytesize would count UTF-8 bytes); Opal.enc sets both, as a binary literal has them.
      def binary(string)
        `Opal.enc(#{string}, "binary")`
      end
    end
  end
end
