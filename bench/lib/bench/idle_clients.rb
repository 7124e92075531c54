# frozen_string_literal: true

require_relative "raw_http"

module Bench
  # Many idle keep-alive connections to one server on 127.0.0.1: each sends one GET, reads its
  # answer and then stays open, doing nothing. Opened in batches (connect, send, then read all
  # of the batch), so the server sees many at once without a connect storm. Created by
  # Bench::IdleMemory for one server; owns the sockets until #close.
  class IdleClients
    BATCH = 100
    # For one batch's answers; a server that holds thousands of connections still answers
    # a hello world at once.
    BATCH_TIMEOUT = 30

    attr_reader :sockets

    def initialize(port)
      @port = port
      @sockets = []
    end

    # Opens count connections, each after a 200 to its GET /; raises RawHTTP::Error or a
    # SystemCallError when one fails (the sockets opened so far stay for #close).
    def open(count)
      while @sockets.size < count
        batch = Array.new([BATCH, count - @sockets.size].min) { RawHTTP.connect(@port) }
        @sockets.concat(batch)
        batch.each { |s| s.write(RawHTTP.get("/")) }
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + BATCH_TIMEOUT
        batch.each do |s|
          status, = RawHTTP.read_response(s, deadline)
          raise RawHTTP::Error, "connection #{@sockets.size}: status #{status}" unless status == 200
        end
      end
      self
    end

    # How many are still open: the server has neither closed nor reset them.
    def still_open
      @sockets.count do |s|
        s.read_nonblock(1, exception: false) == :wait_readable
      rescue SystemCallError, IOError
        false
      end
    end

    def close
      @sockets.each(&:close)
      @sockets.clear
    end
  end
end
