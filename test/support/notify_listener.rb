# frozen_string_literal: true

require "socket"

# What systemd's side of NOTIFY_SOCKET sees: a Unix datagram socket of the test's own, at
# path, whose messages (sd_notify: KEY=VALUE lines, one datagram each) it keeps in order of
# arrival as Hashes.
class NotifyListener
  attr_reader :path, :messages

  def initialize(path)
    @path = path
    @socket = Socket.new(:UNIX, :DGRAM)
    @socket.bind(Addrinfo.unix(path))
    @messages = []
  end

  # Waits for the next message (after those already returned) with all the given fields
  # (String values are matched exactly, Regexps as patterns); returns it. Raises on timeout.
  def wait_for(timeout: 30, **fields)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    @seen ||= 0
    loop do
      while @seen < @messages.size
        message = @messages[@seen]
        @seen += 1
        return message if fields.all? { |k, v| v === message[k.to_s] } # rubocop:disable Style/CaseEquality
      end
      left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      raise "no notification with #{fields} in #{timeout} s; got #{@messages}" if left <= 0

      receive(left)
    end
  end

  # Takes what arrives within seconds; returns those messages.
  def collect(seconds)
    from = @messages.size
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    while (left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)).positive?
      receive(left)
    end
    @seen = @messages.size
    @messages[from..]
  end

  # The messages that are more than STATUS= and WATCHDOG= (READY=1, RELOADING=1, STOPPING=1),
  # in order; each also has "at", when it came (CLOCK_MONOTONIC).
  def steps
    @messages.reject { |m| (m.keys - %w[STATUS WATCHDOG at]).empty? }
  end

  def close
    @socket.close
  end

  private

  def receive(timeout)
    return unless @socket.wait_readable(timeout)

    data = @socket.recv(4096)
    @messages << data.split("\n").to_h { |line| line.split("=", 2) }.merge("at" => Process.clock_gettime(Process::CLOCK_MONOTONIC))
  end
end
