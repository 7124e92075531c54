# frozen_string_literal: true

require "io/nonblock"
require "socket"
require_relative "bind"
require_relative "systemd/listen_fds"

module Up
  # The listening sockets: opened from the binds at a cold start, or adopted from the previous
  # image of this process after a USR2 re-exec, which leaves them open and names their numbers
  # in UP_LISTEN_FDS (so not one connection is refused across the restart). A TCP bind gets a
  # socket for every address its host resolves to (IPv6 ones IPv6-only, so "localhost" takes
  # both families on one port); a Unix bind its socket file (a stale one left by a dead server
  # is replaced; one a live server listens on is an error). Up::Launcher creates it and owns
  # the sockets; the runners hand their numbers to Up::Server#listen_fd, which serves on them
  # without closing them. Under systemd socket activation (LISTEN_FDS) it adopts the sockets
  # systemd passes instead of opening the binds (Up::Systemd::ListenFds). It knows the bind of each socket (#bind_index), across a re-exec too
  # (UP_LISTEN_FDS says "fd:index"), for the sockets that serve HTTPS (Up::TLSSetup).
  class Binder
    class Error < StandardError; end

    ENV_FDS = "UP_LISTEN_FDS"
    # Set across a re-exec when the sockets are systemd's (socket activation).
    ENV_ACTIVATED = "UP_LISTEN_FDS_ACTIVATED"
    BACKLOG = 1024

    attr_reader :sockets

    # binds: Up::Bind each.
    def initialize(binds)
      @binds = binds
      @sockets = []
      @bind_indexes = {} # fileno => index in binds
    end

    # The index in binds of the bind socket was opened for.
    def bind_index(socket)
      @bind_indexes.fetch(socket.fileno)
    end

    # Opens every bind, or adopts the sockets a restart passed. Raises Error, saying which
    # bind and why, after closing what it opened.
    def bind
      fds = ENV.delete(ENV_FDS)
      @activated = ENV.delete(ENV_ACTIVATED) == "1"
      if fds
        adopt(fds)
      elsif (activated = Systemd::ListenFds.take)
        adopt_activated(activated)
      else
        @binds.each { |b| b.unix? ? listen_unix(b) : listen_tcp(b) }
      end
      self
    rescue Error
      close
      raise
    end

    # What a log line shows: http://127.0.0.1:3000, https://[::1]:3443, unix:///run/up.sock.
    def urls
      @sockets.map do |s|
        a = s.local_address
        next "unix://#{a.unix_path}" if a.unix?

        "#{@binds[bind_index(s)]&.tls? ? "https" : "http"}://#{address(a)}"
      end
    end

    # host:port (or the socket path) of each socket, for process titles.
    def addresses
      @sockets.map do |s|
        a = s.local_address
        a.unix? ? a.unix_path : address(a)
      end
    end

    # What a re-exec needs to keep the sockets: they stay open across exec (FD_CLOEXEC
    # cleared) and the new image finds them in the environment.
    def exec_env
      @sockets.each { |s| s.close_on_exec = false }
      { ENV_FDS => @sockets.map { |s| "#{s.fileno}:#{bind_index(s)}" }.join(","),
        ENV_ACTIVATED => @activated ? "1" : nil }.compact
    end

    def exec_fds
      @sockets.map(&:fileno)
    end

    # At a final stop: the sockets stop listening now, in every process that shares them, so
    # new connections are refused at once instead of waiting in the backlog while workers
    # drain and being reset when the last one exits. A server still watching one sees accept
    # fail with EINVAL and stops accepting on it (ext/up/engine/server/server.c). Not the sockets
    # systemd passed: it keeps listening on them, and what comes meanwhile waits in their
    # backlog for the next start.
    def shutdown
      @sockets.each do |s|
        next if @activated
        s.shutdown(Socket::SHUT_RDWR)
      rescue SystemCallError, IOError
        nil
      end
    end

    # Closes the sockets and removes the socket files: the final stop (a re-exec keeps them).
    # The files of sockets systemd passed are its own.
    def close
      @sockets.each do |s|
        next if s.closed?

        path = s.local_address.unix_path if s.local_address.unix? && !@activated
        s.close
        File.unlink(path) if path && File.socket?(path)
      rescue SystemCallError, IOError
        nil
      end
      @sockets = []
      @bind_indexes = {}
    end

    private

    def add(socket, bind)
      @sockets << socket
      @bind_indexes[socket.fileno] = @binds.index(bind)
    end

    def address(a)
      "#{a.ipv6? ? "[#{a.ip_address}]" : a.ip_address}:#{a.ip_port}"
    end

    def adopt(fds)
      @sockets = fds.split(",").map do |entry|
        fd, index = entry.split(":", 2).map { |n| Integer(n, 10) }
        Socket.for_fd(fd).tap do |s|
          s.close_on_exec = true
          s.nonblock = true
          @bind_indexes[fd] = index || 0
        end
      end
    rescue ArgumentError, SystemCallError => e
      raise Error, "the sockets #{ENV_FDS}=#{fds} a restart passed: #{e.message}"
    end

    # Socket activation: each socket serves as the bind for its address (so ssl://HOST:PORT
    # or -s with the port of the .socket unit's ListenStream= makes it HTTPS), else as plain
    # HTTP on a bind of its own.
    def adopt_activated(activated)
      @activated = true
      activated.each do |socket, _name|
        socket.nonblock = true
        a = socket.local_address
        index = @binds.index { |b| b.unix? ? a.unix? && b.path == a.unix_path : a.ip? && b.port == a.ip_port }
        unless index
          @binds += [Bind.parse(a.unix? ? "unix://#{a.unix_path}" : "tcp://#{address(a)}", 0)]
          index = @binds.size - 1
        end
        @sockets << socket
        @bind_indexes[socket.fileno] = index
      end
    rescue SystemCallError, Bind::Error => e
      raise Error, "the sockets systemd passed (LISTEN_FDS): #{e.message}"
    end

    def listen_tcp(bind)
      # Port 0 asks the kernel for one: every other address and TCP bind gets the same.
      port = bind.port.zero? && @picked_port ? @picked_port : bind.port
      addresses = Addrinfo.getaddrinfo(bind.host, port, nil, :STREAM, nil, Socket::AI_PASSIVE)
      opened = 0
      addresses.each do |ai|
        ai = Addrinfo.tcp(ai.ip_address, port) if port.zero? && opened.positive?
        socket = tcp_socket(ai)
        next unless socket

        port = socket.local_address.ip_port
        @picked_port ||= port if bind.port.zero?
        add(socket, bind)
        opened += 1
      end
      raise Error, "#{bind}: no address of #{bind.host} can be bound" if opened.zero?
    rescue SystemCallError, SocketError => e
      raise Error, "#{bind}: #{e.message}"
    end

    # A listening socket on ai, or nil for an address this host does not have ("localhost"
    # naming ::1 where IPv6 is off).
    def tcp_socket(ai)
      socket = Socket.new(ai.afamily, :STREAM)
      socket.setsockopt(:SOCKET, :REUSEADDR, true)
      socket.ipv6only! if ai.ipv6?
      socket.bind(ai)
      socket.listen(BACKLOG)
      socket.nonblock = true
      socket
    rescue Errno::EADDRNOTAVAIL, Errno::EAFNOSUPPORT
      socket&.close
      nil
    rescue StandardError
      socket&.close
      raise
    end

    def listen_unix(bind)
      remove_stale(bind)
      socket = Socket.new(:UNIX, :STREAM)
      begin
        socket.bind(Addrinfo.unix(bind.path))
        File.chmod(bind.mode, bind.path) if bind.mode
        socket.listen(BACKLOG)
        socket.nonblock = true
      rescue StandardError
        socket.close
        File.unlink(bind.path) if File.socket?(bind.path)
        raise
      end
      add(socket, bind)
    rescue SystemCallError => e
      raise Error, "#{bind}: #{e.message}"
    end

    # A socket file nobody listens on is what a killed server leaves: take its place.
    def remove_stale(bind)
      return unless File.socket?(bind.path)

      Socket.unix(bind.path).close
      raise Error, "#{bind}: a server is listening on it already"
    rescue Errno::ECONNREFUSED
      File.unlink(bind.path)
    end
  end
end
