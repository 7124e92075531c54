# frozen_string_literal: true

require "socket"
require "up/pub_sub/resp"

# A redis-server of the test's own (Debian's, installed by bin/setup --test) on a free loopback
# port, in a temp dir, without persistence. #start waits until it answers PING (never a fixed
# sleep); #kill and #start again on the same port is a Redis restart; #call sends one command
# on a connection of its own, to look at Redis from outside the code under test.
class RedisServer
  attr_reader :port, :socket_path

  def initialize(dir)
    @dir = dir
    @port = free_port
    @socket_path = File.join(dir, "redis.sock")
    @pid = nil
  end

  def url(login = nil)
    "redis://#{login && "#{login}@"}127.0.0.1:#{@port}"
  end

  # Starts redis-server with extra config lines (as arguments: "--user", "a", "on", ...);
  # waits at most timeout seconds for its PONG.
  def start(*extra, timeout: 10)
    log = File.join(@dir, "redis.log")
    @pid = Process.spawn("redis-server", "--port", @port.to_s, "--bind", "127.0.0.1", "--save", "",
                         "--appendonly", "no", "--dir", @dir, "--unixsocket", @socket_path,
                         "--daemonize", "no", *extra, out: [log, "a"], err: [log, "a"])
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    until pong?
      if Process.wait(@pid, Process::WNOHANG) || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        @pid = nil
        raise "redis-server did not answer PING on port #{@port}; its log:\n#{File.read(log)}"
      end
      sleep 0.01 # polling for the PONG, not waiting for time to pass
    end
    self
  end

  # SIGKILL, as a crash; waits for the process to be gone.
  def kill
    signal(:KILL)
    Process.wait(@pid)
    @pid = nil
  end

  def stop
    return unless @pid

    signal(:CONT)
    kill
  rescue Errno::ESRCH, Errno::ECHILD
    @pid = nil
  end

  def signal(name)
    Process.kill(name, @pid)
  end

  # One command on a new connection; the reply (an error reply too), raising on a timeout.
  def call(*args, timeout: 5, password: nil)
    socket = Socket.tcp("127.0.0.1", @port, connect_timeout: timeout)
    parser = Up::PubSub::RESP.new
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + timeout
    socket.write(Up::PubSub::RESP.command("AUTH", *password)) if password
    socket.write(Up::PubSub::RESP.command(*args))
    replies = []
    while replies.size < (password ? 2 : 1)
      reply = parser.next_reply
      if reply == Up::PubSub::RESP::INCOMPLETE
        left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
        raise "no reply from Redis to #{args.inspect}" unless left.positive? && socket.wait_readable(left)

        parser.feed(socket.readpartial(65_536))
      else
        replies << reply
      end
    end
    replies.last
  ensure
    socket&.close
  end

  private

  def pong?
    call("PING", timeout: 1) == "PONG"
  rescue SystemCallError, IOError, RuntimeError
    false
  end

  # A free port below the kernel's ephemeral range (32768 and up by default), so that no
  # outgoing connection takes it while Redis is down between a kill and a start.
  def free_port
    100.times do
      port = rand(20_000...32_768)
      TCPServer.new("127.0.0.1", port).close
      return port
    rescue Errno::EADDRINUSE
      next
    end
    raise "no free port between 20000 and 32767"
  end
end
