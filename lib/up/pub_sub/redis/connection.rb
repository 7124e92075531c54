# frozen_string_literal: true

require "socket"
require "io/wait"
require_relative "../resp"

module Up
  module PubSub
    class Redis
      # One socket to a Redis server, speaking RESP2 (Up::PubSub::RESP). Every wait has a
      # deadline and is cut into slices of WAIT_SLICE seconds, between which the cancelled
      # callable is asked whether to give up (Redis#close): no call here blocks for longer
      # than its deadline, nor past a close by more than a slice. The engine opens two, the
      # subscriber and the publisher; on the subscriber one thread reads while another writes,
      # which is safe because reading and writing touch separate state here and in the IO.
      class Connection
        READ_CHUNK = 64 * 1024
        # How late a thread waiting here notices that the engine is closing.
        WAIT_SLICE = 0.05

        # What #read returns when the deadline passes first (no reply is a Symbol).
        TIMEOUT = :timeout

        # A failure that is not the socket's: a handshake refused, a deadline passed.
        class Error < StandardError; end
        # The engine is closing.
        class Cancelled < StandardError; end

        # The monotonic time the last bytes arrived.
        attr_reader :last_read_at

        # Connects to address and checks that a Redis answers (AUTH when the URL has a
        # password, then PING), all before deadline. Raises Error, Cancelled or
        # SystemCallError; closes the socket on every failure.
        def self.open(address, deadline:, cancelled:)
          io = connect(address, deadline, cancelled)
          conn = new(io, cancelled: cancelled)
          conn.handshake(address, deadline)
          conn
        rescue StandardError
          conn ? conn.close : io&.close
          raise
        end

        # A socket connected to the socket file, or to the first address of the host that
        # accepts, tried in the resolver's order. Never blocks: a Unix socket whose listen
        # queue is full would.
        def self.connect(address, deadline, cancelled)
          error = nil
          addrinfos = if address.unix? then [Addrinfo.unix(address.path)]
                      else Addrinfo.getaddrinfo(address.host, address.port, nil, :STREAM)
                      end
          addrinfos.each do |ai|
            socket = Socket.new(ai.afamily, Socket::SOCK_STREAM, 0)
            begin
              while socket.connect_nonblock(ai.to_sockaddr, exception: false) == :wait_writable
                raise Error, "connect timed out" unless wait(socket, :wait_writable, deadline, cancelled)
              end
              unless address.unix?
                socket.setsockopt(Socket::IPPROTO_TCP, Socket::TCP_NODELAY, 1)
                socket.setsockopt(Socket::SOL_SOCKET, Socket::SO_KEEPALIVE, 1)
              end
              return socket
            rescue SystemCallError => e
              socket.close
              error = e
            rescue StandardError
              socket.close
              raise
            end
          end
          raise error || Error.new("#{address} has no address")
        end

        # True once io is ready (how: :wait_readable or :wait_writable), false when the deadline
        # passes first; raises Cancelled.
        def self.wait(io, how, deadline, cancelled)
          loop do
            raise Cancelled, "closing" if cancelled.call

            left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
            return false if left <= 0
            return true if io.public_send(how, left < WAIT_SLICE ? left : WAIT_SLICE)
          end
        end

        def initialize(io, cancelled:)
          @io = io
          @cancelled = cancelled
          @parser = RESP.new
          @chunk = String.new(capacity: READ_CHUNK, encoding: Encoding::BINARY)
          @last_read_at = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        end

        def handshake(address, deadline)
          if address.password
            auth = address.username ? ["AUTH", address.username, address.password] : ["AUTH", address.password]
            reply = call(auth, deadline)
            raise Error, "AUTH refused: #{reply.message}" if reply.is_a?(RESP::ErrorReply)
          end
          reply = call(["PING"], deadline)
          raise Error, "PING answered #{reply.is_a?(RESP::ErrorReply) ? reply.message : reply.inspect}" unless reply == "PONG"
        end

        # Writes one command and reads its reply; raises Error when the deadline passes.
        def call(args, deadline)
          write(RESP.command(*args), deadline)
          reply = read(deadline)
          raise Error, "no reply to #{args.first} in time" if reply.equal?(TIMEOUT)

          reply
        end

        # Writes all of bytes; raises Error when the deadline passes first, Cancelled, IOError
        # or SystemCallError.
        def write(bytes, deadline)
          until bytes.empty?
            n = @io.write_nonblock(bytes, exception: false)
            if n == :wait_writable
              raise Error, "Redis does not read (write timed out)" unless wait(:wait_writable, deadline)
            else
              bytes = bytes.byteslice(n, bytes.bytesize - n)
            end
          end
        end

        # The next reply, or TIMEOUT when none is complete by deadline (the bytes of a partial
        # one are kept). Raises EOFError, IOError, SystemCallError, RESP::ProtocolError, Cancelled.
        def read(deadline)
          loop do
            reply = @parser.next_reply
            return reply unless reply.equal?(RESP::INCOMPLETE)

            case @io.read_nonblock(READ_CHUNK, @chunk, exception: false)
            when nil then raise EOFError, "Redis closed the connection"
            when :wait_readable then return TIMEOUT unless wait(:wait_readable, deadline)
            else
              @last_read_at = Process.clock_gettime(Process::CLOCK_MONOTONIC)
              @parser.feed(@chunk)
            end
          end
        end

        # Whether the server closed the connection or sent what nobody asked for (the
        # publisher's connection has no reply pending between two batches).
        def dead?
          return false unless @io.wait_readable(0)

          @io.read_nonblock(1, exception: false) != :wait_readable
        rescue IOError, SystemCallError
          true
        end

        def close
          @io.close unless @io.closed?
        rescue IOError, SystemCallError
          nil
        end

        private

        def wait(how, deadline)
          self.class.wait(@io, how, deadline, @cancelled)
        end
      end
    end
  end
end
