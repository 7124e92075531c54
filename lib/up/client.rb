# frozen_string_literal: true

module Up
  # A WebSocket or event-stream connection's client (docs/websockets.md). Its
  # methods are the binding's (ext/up/ruby/client.c, subscription.c) but for publish, which
  # is Up.publish's.
  class Client
    def publish(channel, message, engine = nil)
      Up.publish(channel, message, engine)
    end
  end
end
