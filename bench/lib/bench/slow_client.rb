# frozen_string_literal: true

require "socket"

module Bench
  # A client on a slow link: sends one GET to 127.0.0.1 and takes at most `chunk` bytes of the
  # response every `interval` seconds until it has the whole body (by its content-length), so
  # the server must keep the rest and send it as the client makes room. Created by
  # Bench::SlowReader for one download; owns its socket for the length of #run.
  class SlowClient
    # status: the response's status code. length: its content-length. body_bytes: what
    # arrived after the head. seconds: from sending the request to the last byte.
    Result = Struct.new(:status, :length, :body_bytes, :seconds, keyword_init: true)

    class Error < StandardError; end

    HEAD_END = "\r\n\r\n"

    def initialize(port:, chunk:, interval:, timeout:, path: "/")
      @port = port
      @chunk = chunk
      @interval = interval
      @timeout = timeout
      @path = path
    end

    # Downloads the response; raises Error when it does not complete within the timeout or
    # has no content-length.
    def run
      socket = Socket.tcp("127.0.0.1", @port, connect_timeout: 5)
      socket.write("GET #{@path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
      started = now
      result = download(socket, started + @timeout)
      result.seconds = now - started
      result
    ensure
      socket&.close
    end

    private

    def download(socket, deadline)
      head = +""
      result = nil
      buffer = +""
      next_read = now
      loop do
        data = read_some(socket, buffer, deadline) or break
        if result
          result.body_bytes += data.bytesize
        else
          head << data
          result = parse_head(head)
        end
        break if result && result.body_bytes >= result.length

        next_read = pace(next_read)
      end
      raise Error, "the connection closed before the head ended" unless result

      result
    end

    # The Result once head holds the whole head (body bytes already read counted), else nil.
    def parse_head(head)
      finish = head.index(HEAD_END) or return nil
      status = head[%r{\AHTTP/1\.[01] (\d{3})}, 1] or raise Error, "not an HTTP response: #{head[0, 40].inspect}"
      length = head[/^content-length:\s*(\d+)\r$/i, 1] or raise Error, "the response has no content-length"
      Result.new(status: status.to_i, length: length.to_i, body_bytes: head.bytesize - finish - HEAD_END.bytesize)
    end

    # Waits until the next read is due (one interval after the last one was due), without
    # building up a debt of reads when one was late.
    def pace(next_read)
      next_read = [next_read + @interval, now].max
      pause = next_read - now
      sleep(pause) if pause.positive?
      next_read
    end

    # Up to @chunk bytes, nil at end of stream; raises Error past the deadline.
    def read_some(socket, buffer, deadline)
      loop do
        data = socket.read_nonblock(@chunk, buffer, exception: false)
        return data unless data == :wait_readable

        left = deadline - now
        raise Error, "incomplete after #{@timeout.round} s" if left <= 0

        socket.wait_readable(left)
      end
    end

    def now
      Process.clock_gettime(Process::CLOCK_MONOTONIC)
    end
  end
end
