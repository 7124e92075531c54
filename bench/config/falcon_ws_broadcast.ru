# frozen_string_literal: true

# test/rackup/ws_broadcast.ru for Falcon, with async-websocket (bench/Gemfile): a connection to
# /publish sends each of its messages to every subscriber, which is every other connection
# (one process, so a Set of them is the channel). Each message is written and flushed to each
# subscriber in turn on the publisher's fiber, as async-websocket's own chat example does.
# Measured by bench/run's ws_broadcast table.
require "async/websocket/adapters/rack"
require "set"

subscribers = Set.new

run lambda { |env|
  Async::WebSocket::Adapters::Rack.open(env) do |connection|
    if env["PATH_INFO"] == "/publish"
      while (message = connection.read)
        subscribers.each do |subscriber|
          subscriber.write(message)
          subscriber.flush
        end
      end
    else
      begin
        subscribers << connection
        nil while connection.read # its messages are ignored; nil at the close
      ensure
        subscribers.delete(connection)
      end
    end
  end or [426, { "content-type" => "text/plain" }, ["WebSocket only\n"]]
}
