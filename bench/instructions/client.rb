# frozen_string_literal: true

# Sends COUNT requests for PATH (/) to 127.0.0.1:PORT over CONNECTIONS keep-alive connections,
# one outstanding on each, and reads every response whole. Used by bench/instructions/run,
# where the server runs under callgrind and its speed does not matter, only that each request
# is answered.
require "socket"

port, count, connections = ARGV.first(3).map { |a| Integer(a) }
abort "usage: client.rb PORT COUNT CONNECTIONS [PATH]" unless port && count && connections

REQUEST = "GET #{ARGV.fetch(3, "/")} HTTP/1.1\r\nHost: localhost\r\n\r\n"

def read_response(sock)
  data = +""
  data << sock.readpartial(16_384) until data.include?("\r\n\r\n")
  head, body = data.split("\r\n\r\n", 2)
  length = head[/^content-length: *(\d+)/i, 1] or abort "no content-length in #{head.inspect}"
  body << sock.readpartial(16_384) while body.bytesize < length.to_i
end

Array.new(connections) do |i|
  Thread.new do
    sock = TCPSocket.new("127.0.0.1", port)
    (count / connections + (i < count % connections ? 1 : 0)).times do
      sock.write(REQUEST)
      read_response(sock)
    end
    sock.close
  end
end.each(&:join)
