# frozen_string_literal: true

# Run by test/test_outlived_server.rb under valgrind: an app keeps the objects the server gave
# it (Up::Client, Up::Subscription, env's rack.hijack and rack.early_hints) after the server
# was stopped and collected, then uses them and lets GC mark and free them. Prints what each
# call answered; valgrind tells whether any of it touched freed memory.
$LOAD_PATH.unshift File.expand_path("../../lib", __dir__), File.expand_path("..", __dir__)
require "up"
require "stringio"
require "support/ws_client"

KEPT = Queue.new
CLOSED = Queue.new
# A block made here, not in serve_and_drop, so that it does not hold the server's variable.
IGNORE = proc { |_channel, _message| nil }

# Keeps its client and a subscription, or only the subscription (then the client is the
# subscription's to keep alive).
class KeepingHandler
  def initialize(keep_client)
    @keep_client = keep_client
  end

  def on_open(client)
    sub = client.subscribe("news", &IGNORE)
    KEPT << [:client, @keep_client ? client : nil, sub]
  end

  def on_close(_client)
    CLOSED << true
  end
end

def serve_and_drop(close_clients:)
  app = lambda do |env|
    case env["PATH_INFO"]
    when "/keep" then env["rack.upgrade"] = KeepingHandler.new(true)
    when "/sub-only" then env["rack.upgrade"] = KeepingHandler.new(false)
    else KEPT << [:env, env["rack.hijack"], env["rack.early_hints"]]
    end
    [200, {}, ["x"]]
  end
  server = Up::Server.new(app, threads: 1)
  server.log_io = StringIO.new
  server.listen("127.0.0.1", 0)
  port = server.addresses.first[1]
  runner = Thread.new { server.run }
  KEPT << [:server_sub, server.subscribe("news", false, &IGNORE)]
  sockets = %w[/keep /sub-only].map { |path| WSClient.open(port, path: path).socket }
  plain = TCPSocket.new("127.0.0.1", port)
  plain.write("GET /plain HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
  plain.read
  plain.close
  # Closed by the client, or else by the stop (on_shutdown, then the close).
  sockets.each(&:close) if close_clients
  deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 10
  sleep 0.01 while close_clients && CLOSED.size < 2 && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
  server.stop
  runner.join
  sockets.each(&:close)
  CLOSED.clear
  nil
end

def collect
  4.times { GC.start(full_mark: true, immediate_sweep: true) }
end

[true, false].each do |close_clients|
  Thread.new { serve_and_drop(close_clients: close_clients) }.join # no stack of ours holds the server
  collect
  puts "servers left: #{ObjectSpace.each_object(Up::Server).count}"
  items = []
  items << KEPT.pop until KEPT.empty?
  items.each do |kind, *objects|
    case kind
    when :client
      client, sub = objects
      if client
        puts "client write=#{client.write("late").inspect} open=#{client.open?.inspect} " \
             "pending=#{client.pending.inspect} timeout=#{client.timeout.inspect} close=#{client.close.inspect}"
      end
      puts "client subscription cancel=#{sub.cancel.inspect} active=#{sub.active?.inspect}"
    when :server_sub
      puts "server subscription cancel=#{objects[0].cancel.inspect} active=#{objects[0].active?.inspect}"
    when :env
      hijack, hints = objects
      hijack_answer = begin
        hijack.call
      rescue IOError => e
        e.class
      end
      puts "hijack=#{hijack_answer} early_hints=#{hints.call({ "link" => "</a>" }).inspect}"
    end
  end
  items.clear
  collect
end
puts "done"
