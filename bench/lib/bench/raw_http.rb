# frozen_string_literal: true

require "socket"

module Bench
  # One HTTP/1.1 GET at a time over a raw keep-alive socket to 127.0.0.1, for the scenarios
  # that hold connections themselves (Bench::SlowCall, Bench::IdleMemory) rather than let a
  # library pool or close them. Plain functions; the caller owns the sockets.
  module RawHTTP
    class Error < StandardError; end

    HEAD_END = "\r\n\r\n"

    def self.connect(port)
      Socket.tcp("127.0.0.1", port, connect_timeout: 10)
    end

    def self.get(path)
      "GET #{path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    end

    # Reads one response with a content-length body; returns [status, body]. Raises Error when
    # the connection closes first, the response is not one, or the deadline (a monotonic
    # clock time) passes.
    def self.read_response(socket, deadline)
      data = +""
      data << read_some(socket, deadline) until (finish = data.index(HEAD_END))
      status = data[%r{\AHTTP/1\.[01] (\d{3})}, 1] or raise Error, "not an HTTP response: #{data[0, 40].inspect}"
      length = data[/^content-length:\s*(\d+)\r$/i, 1] or raise Error, "the response has no content-length"
      body_start = finish + HEAD_END.bytesize
      data << read_some(socket, deadline) while data.bytesize < body_start + length.to_i
      [status.to_i, data.byteslice(body_start, length.to_i)]
    end

    # Raises Error unless response ([status, body] from #read_response) is a 200 with body.
    def self.check(path, response, body)
      status, got = response
      return if status == 200 && got == body

      raise Error, "wrong answer to GET #{path}: status #{status}, #{got[0, 40].inspect}"
    end

    def self.read_some(socket, deadline)
      loop do
        chunk = socket.read_nonblock(65_536, exception: false)
        raise Error, "the server closed the connection" if chunk.nil?
        return chunk unless chunk == :wait_readable

        left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
        raise Error, "no complete response in time" if left <= 0

        socket.wait_readable(left)
      end
    end
    private_class_method :read_some
  end
end
