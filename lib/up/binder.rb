# frozen_string_literal: true

require "socket"
require_relative "bind"

module Up
  # The listening sockets of a server, opened from its binds before any worker starts: a TCP
  # bind gets a socket for every address its host resolves to (IPv6 ones IPv6-only, so
  # "localhost" takes both families on one port), a Unix bind its socket file (a stale one
  # left by a dead server is replaced; one a live server listens on is an error). The engine
  # serves on the sockets (Up::Server#listen_fd) but never closes them: this object does, and
  # removes the socket files it made. Created by Up::Launcher; the cluster master's workers
  # inherit the sockets through fork.
  class Binder
    class Error < StandardError; end

    BACKLOG = 1024

    attr_reader :sockets

    def initialize(binds)
      @binds = binds
      @sockets = []
      @paths = []
    end

    # Opens every bind. Raises Error, saying which bind and why, after closing what it opened.
    def listen
      @binds.each { |bind| bind.unix? ? listen_unix(bind) : listen_tcp(bind) }
      self
    rescue Error
      close
      raise
    end

    # What a log line shows: http://127.0.0.1:3000, http://[::1]:3000, unix:///run/up.sock.
    def urls
      @sockets.map do |s|
        a = s.local_address
        next "unix://#{a.unix_path}" if a.unix?

        "http://#{a.ipv6? ? "[#{a.ip_address}]" : a.ip_address}:#{a.ip_port}"
      end
    end

    def close
      @sockets.each { |s| s.close unless s.closed? }
      @sockets.clear
      @paths.each { |path| File.unlink(path) if File.socket?(path) }
      @paths.clear
    end

    private

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
        @sockets << socket
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
        @paths << bind.path
        File.chmod(bind.mode, bind.path) if bind.mode
        socket.listen(BACKLOG)
      rescue StandardError
        socket.close
        raise
      end
      @sockets << socket
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
