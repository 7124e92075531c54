# frozen_string_literal: true

require "socket"

module Bench
  # The two Redis commands bench/run sends, in Redis's own protocol (RESP) over one short TCP
  # connection each: SET foo bar before json_api's table, and INFO commandstats around each
  # of its measured runs. No client gem, so bench/ needs nothing beyond Ruby to talk to the
  # redis-server it starts. Plain functions, used by Bench::AppServices; owns nothing.
  module RedisWire
    TIMEOUT = 5

    # Sends one command (its arguments as strings) to 127.0.0.1:port and returns the reply: a
    # String for a simple or bulk string, an Integer for an integer. Raises IOError for an
    # error reply or a reply it does not read (arrays: no command here answers one).
    def self.command(port, *args)
      Socket.tcp("127.0.0.1", port, connect_timeout: TIMEOUT) do |sock|
        sock.write(["*#{args.size}\r\n", *args.map { |a| "$#{a.bytesize}\r\n#{a}\r\n" }].join)
        reply(sock, args.first)
      end
    end

    # GET calls Redis has served since it started (INFO commandstats' cmdstat_get), 0 before
    # the first one.
    def self.get_calls(port)
      info = command(port, "INFO", "commandstats")
      info[/^cmdstat_get:calls=(\d+)/, 1].to_i
    end

    def self.reply(sock, name)
      line = sock.gets("\r\n") or raise IOError, "#{name}: Redis closed the connection"
      line = line.chomp("\r\n")
      case line[0]
      when "+" then line[1..]
      when ":" then Integer(line[1..], 10)
      when "$" then bulk(sock, Integer(line[1..], 10), name)
      else raise IOError, "#{name} answered #{line.inspect}"
      end
    end
    private_class_method :reply

    def self.bulk(sock, size, name)
      return nil if size.negative?

      data = sock.read(size + 2) or raise IOError, "#{name}: Redis closed the connection"
      raise IOError, "#{name}: short reply" unless data.bytesize == size + 2

      data[0, size]
    end
    private_class_method :bulk
  end
end
