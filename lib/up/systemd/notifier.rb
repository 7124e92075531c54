# frozen_string_literal: true

require "socket"

module Up
  module Systemd
    # Tells systemd (or anything listening on $NOTIFY_SOCKET, a Unix datagram socket) how the
    # server is doing, in the sd_notify protocol: lines of KEY=VALUE, one datagram per message.
    # Up::Lifecycle creates one in the master (or the single process) when NOTIFY_SOCKET is
    # set, and owns it. The variable stays in the environment so that the image a hot restart
    # re-executes (same pid) notifies too; workers inherit it and never use it.
    class Notifier
      # nil when the service manager asked for nothing.
      def self.from_env(env = ENV)
        path = env["NOTIFY_SOCKET"].to_s
        return nil if path.empty?

        new(path, watchdog_usec: watchdog_usec(env))
      end

      # WATCHDOG_USEC, when it is meant for this process (WATCHDOG_PID unset or ours).
      def self.watchdog_usec(env)
        usec = Integer(env["WATCHDOG_USEC"].to_s, 10, exception: false)
        pid = env["WATCHDOG_PID"].to_s
        usec if usec&.positive? && (pid.empty? || pid == Process.pid.to_s)
      end

      def initialize(path, watchdog_usec: nil)
        # "@name" is in the abstract namespace: a leading NUL byte on the wire.
        @address = Addrinfo.unix(path.start_with?("@") ? "\0#{path[1..]}" : path, :DGRAM)
        @watchdog_usec = watchdog_usec
      end

      # Seconds between two WATCHDOG=1, half the time systemd waits; nil without a watchdog.
      def watchdog_interval
        @watchdog_usec && @watchdog_usec / 2_000_000.0
      end

      # Sends the fields (KEY => value) as one message. A manager that is gone is no reason
      # to stop serving: errors are swallowed.
      def notify(fields)
        message = fields.map { |k, v| "#{k}=#{v}\n" }.join
        socket.sendmsg(message, 0, @address)
        true
      rescue SystemCallError, IOError
        false
      end

      private

      def socket
        @socket ||= Socket.new(:UNIX, :DGRAM).tap { |s| s.close_on_exec = true }
      end
    end
  end
end
