# frozen_string_literal: true

require "socket"

module Up
  module Systemd
    # The listening sockets systemd passes to a socket-activated service (sd_listen_fds):
    # LISTEN_FDS of them from fd 3 on, for the process LISTEN_PID names, with their names in
    # LISTEN_FDNAMES when the .socket unit gives them (FileDescriptorName=). Up::Binder takes
    # them once at a cold start; the variables are removed, so neither the app's children nor
    # the image of a hot restart (which finds its sockets in UP_LISTEN_FDS) take them again.
    class ListenFds
      FIRST_FD = 3

      # Sockets of the activation: [[Socket, name], ...]; nil when there is none for us.
      def self.take(env = ENV)
        count = Integer(env["LISTEN_FDS"].to_s, 10, exception: false)
        pid = Integer(env["LISTEN_PID"].to_s, 10, exception: false)
        names = env["LISTEN_FDNAMES"].to_s.split(":")
        %w[LISTEN_FDS LISTEN_PID LISTEN_FDNAMES].each { |var| env.delete(var) }
        return nil unless count&.positive? && pid == Process.pid

        Array.new(count) do |i|
          socket = Socket.for_fd(FIRST_FD + i)
          socket.autoclose = true
          socket.close_on_exec = true
          [socket, names[i]]
        end
      end
    end
  end
end
