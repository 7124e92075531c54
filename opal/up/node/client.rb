# frozen_string_literal: true
# backtick_javascript: true

require "up/node/subscription"

module Up
  # A WebSocket or event-stream connection's client on up_node (reference/websocket-pubsub.md),
  # with up_ruby's methods and answers (ext/up/ruby/client.c, subscription.c). Up::Node::Upgrader
  # makes one when the app takes an upgrade; it wraps the connection's JS side
  # (node/up_node/websocket.js or sse.js), which calls #callback for the handler's events and
  # #finish at the end. Every callback runs on Node's one thread, so a client's callbacks never
  # run at once; what one raises is logged, and the connection goes on.
  class Client
    attr_reader :env, :handler

    # protocol: "websocket" or "sse" (a Symbol is a String in Opal). log: the JS Log.
    def initialize(protocol, env, handler, pubsub, log)
      @protocol = protocol
      @env = env
      @handler = handler
      @pubsub = pubsub
      @log = log
      @conn = nil
      @closed = false
    end

    # Called once the connection exists (nil: the client left during the handshake). conn is a
    # JS object, not a Ruby one: only backticks talk to it.
    def open(conn)
      if `#{conn} == null || #{conn} === Opal.nil`
        @closed = true
        return
      end
      @conn = conn
      callback(:on_open)
    end

    # write(data) on a WebSocket: a binary (ASCII-8BIT) String as a binary frame, any other as
    # text; write(data, event:, id:) on an event stream. True when queued, false once closed.
    def write(data, event: nil, id: nil)
      raise TypeError, "write takes a String, not a #{data.class}" unless data.is_a?(String)
      return false if @closed

      if @protocol == :websocket
        if data.encoding != Encoding::BINARY && !`#{data}.toString().isWellFormed()`
          raise ArgumentError, "a text message must be valid UTF-8 (send a binary String for bytes)"
        end
        `#{@conn}.write(#{data})`
      else
        `#{@conn}.write(#{data}, #{event.nil? ? nil : event.to_s}, #{id.nil? ? nil : id.to_s})`
      end
    end

    # The close handshake (WebSocket) or the end of the stream, behind what was written.
    def close
      `#{@conn}.close()` unless @closed
      nil
    end

    def open?
      !@closed && `#{@conn}.isOpen()`
    end

    # Writes not yet handed to the kernel; -1 once closed. Above 0, on_drained is owed.
    def pending
      @closed ? -1 : `#{@conn}.pending()`
    end

    # The old handler's on_close, then the new one's on_open; the connection and its
    # subscriptions stay.
    def handler=(handler)
      callback(:on_close) unless @closed
      @handler = handler
      callback(:on_open) unless @closed
    end

    # Seconds between pings of an idle WebSocket (an event stream's heartbeat); nil once closed.
    def timeout
      @closed ? nil : `#{@conn}.timeout()`
    end

    def timeout=(seconds)
      seconds_f = seconds.to_f
      raise ArgumentError, "timeout must be between 0 and 86400 seconds" unless seconds_f >= 0 && seconds_f <= 86_400

      `#{@conn}.setTimeout(#{seconds_f})` unless @closed
    end

    def protocol
      @protocol == :websocket ? :websocket : :sse
    end

    # The pub/sub API's version (reference: truthy).
    def pubsub?
      0
    end

    # subscribe(channel, match: nil, as: :text) { |channel, message| ... }: an Up::Subscription,
    # or nil once the client is closed. The draft's is_pattern may come second.
    def subscribe(channel, is_pattern = nil, match: nil, as: nil, &block)
      pattern = Subscription.pattern?(is_pattern, match)
      raise ArgumentError, "as: must be :text or :binary, not #{as.inspect}" unless as.nil? || as == :text || as == :binary
      return nil if @closed || !open?

      delivery = if block then "block"
                 elsif @protocol == :sse then "sse"
                 elsif as == :binary then "binary"
                 else "text"
                 end
      Subscription.subscribe(@pubsub, @conn, self, channel.to_s, pattern, delivery, block)
    end

    def unsubscribe(channel, is_pattern = nil, match: nil)
      Subscription.unsubscribe(@pubsub, @conn, channel.to_s, Subscription.pattern?(is_pattern, match)) unless @closed
      nil
    end

    def publish(channel, message, engine = nil)
      Up.publish(channel, message, engine)
    end

    # ---- the connection's side (node/up_node/websocket.js, sse.js)

    # Runs the handler's callback name (on_open, on_message, on_drained, on_shutdown) with
    # this client and arg, if it has one. A method the handler defines is called as a JS
    # function, found with one look-up: respond_to? and __send__ would each look its name up
    # again, on every message. Only one answered by respond_to_missing? goes through them.
    def callback(name, arg = nil)
      handler = @handler
      %x{
        var method = handler[Opal.jsid(name)];
        if (typeof method === 'function' && !method.$$stub) {
          return arg === nil ? method.call(handler, self) : method.call(handler, self, arg);
        }
      }
      return unless handler.respond_to?(name)

      arg.nil? ? handler.__send__(name, self) : handler.__send__(name, self, arg)
    rescue ::Exception => e # JS errors too
      report(e)
    end

    # The connection closed: on_close runs last, and the subscriptions end with it.
    def finish
      @closed = true
      callback(:on_close)
      Subscription.end_all(@pubsub, @conn)
    end

    # A subscription's block raised.
    def report(error)
      `#{@log}.line(#{"error in a WebSocket callback for #{@env["REQUEST_METHOD"]} #{@env["REQUEST_URI"]}: #{Node.describe(error)}"})`
    end

    def inspect
      "#<Up::Client #{@protocol}#{" closed" if @closed}>"
    end
  end
end
