# frozen_string_literal: true

require "socket"
require "io/nonblock"

module Up
  # The listening sockets: bound from the options at a cold start, or adopted from the
  # previous image of this process after a USR2 re-exec, which leaves them open and names
  # their numbers in UP_LISTEN_FDS (so not one connection is refused across the restart).
  # Up::Launcher creates it and owns the sockets; the runners hand their numbers to
  # Up::Server#listen_fd, which serves on them without closing them.
  class Binder
    ENV_FDS = "UP_LISTEN_FDS"
    BACKLOG = 1024

    attr_reader :sockets

    def initialize(options)
      @options = options
      @sockets = []
    end

    # Binds or adopts; raises Launcher::StartError when nothing can be bound.
    def bind
      fds = ENV.delete(ENV_FDS)
      fds ? adopt(fds) : bind_new
      self
    end

    def urls
      @sockets.map do |s|
        a = s.local_address
        host = a.ipv6? ? "[#{a.ip_address}]" : a.ip_address
        "http://#{host}:#{a.ip_port}"
      end
    end

    # host:port of each socket, for process titles.
    def addresses
      urls.map { |url| url.delete_prefix("http://") }
    end

    # What a re-exec needs to keep the sockets: they stay open across exec (FD_CLOEXEC
    # cleared) and the new image finds them in the environment.
    def exec_env
      @sockets.each { |s| s.close_on_exec = false }
      { ENV_FDS => @sockets.map(&:fileno).join(",") }
    end

    def exec_fds
      @sockets.map(&:fileno)
    end

    # At a final stop: the sockets stop listening now, in every process that shares them,
    # so new connections are refused at once instead of waiting in the backlog while
    # workers drain and being reset when the last one exits. A server still watching one
    # sees accept fail with EINVAL and stops accepting on it (ext/up/engine/server.c).
    def shutdown
      @sockets.each do |s|
        s.shutdown(Socket::SHUT_RDWR)
      rescue SystemCallError, IOError
        nil
      end
    end

    def close
      @sockets.each { |s| s.close unless s.closed? }
      @sockets = []
    end

    private

    def adopt(fds)
      @sockets = fds.split(",").map do |fd|
        Socket.for_fd(Integer(fd)).tap do |s|
          s.close_on_exec = true
          s.nonblock = true
        end
      end
    rescue ArgumentError, SystemCallError => e
      raise Launcher::StartError, "cannot adopt the listening sockets #{ENV_FDS}=#{fds}: #{e.message}"
    end

    # Every address the host names (localhost: 127.0.0.1 and ::1). One that cannot be bound
    # is skipped (a host without IPv6), but a port in use is an error whatever else bound.
    # With port 0 the addresses share the port the kernel gave the first.
    def bind_new
      host = @options[:bind]
      port = @options[:port]
      addresses = Addrinfo.getaddrinfo(host, port, nil, :STREAM, nil, Socket::AI_PASSIVE)
      error = nil
      addresses.each do |ai|
        ai = Addrinfo.tcp(ai.ip_address, @sockets.first.local_address.ip_port) if port.zero? && @sockets.any?
        @sockets << listen(ai)
      rescue Errno::EADDRINUSE
        raise
      rescue SystemCallError => e
        error = e
      end
      raise error || SocketError.new("no address") if @sockets.empty?
    rescue SystemCallError, SocketError => e
      close
      raise Launcher::StartError, "cannot listen on #{host}:#{port}: #{e.message}"
    end

    def listen(ai)
      socket = Socket.new(ai.afamily, :STREAM)
      socket.setsockopt(:SOCKET, :REUSEADDR, true)
      socket.ipv6only! if ai.ipv6?
      socket.bind(ai)
      socket.listen(BACKLOG)
      socket.nonblock = true
      socket
    rescue SystemCallError
      socket&.close
      raise
    end
  end
end
