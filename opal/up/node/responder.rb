# frozen_string_literal: true
# backtick_javascript: true

require "up/node/stream"
require "up/node/hijacked_io"

module Up
  module Node
    # Sends what an app returned through an Exchange (node/up_node/exchange.js), the way
    # up_ruby does: an Array body at once with a computed content-length; a to_path body as
    # the file, with ranges and conditional requests (and HEAD its length); an `each` body part by part as it is made (chunked unless
    # the app set a length); a callable body given a Stream. Header values that are Arrays
    # become one line each (set-cookie is never merged). `close` is called on the body once
    # it is sent, or failed. Up::Node::Handler makes one per response; what it raises, the
    # handler turns into a 500.
    class Responder
      # The app's response breaks the SPEC (a status that is no Integer, headers that are no
      # Hash, a body with neither each nor call): logged without a backtrace into UP!.
      class InvalidResponse < StandardError; end

      # report: called with what a partial hijack's callable raises, after the response.
      def initialize(exchange, env, report = nil)
        @exchange = exchange
        @env = env
        @report = report
      end

      def respond(status, headers, body)
        check_status(status)
        check_headers(headers)
        when_finished(status, headers)
        if (callable = socket_callable(status, headers, body))
          hand_over(status, headers, body, callable)
        elsif file_body?(status, body)
          closer = -> { body.close if body.respond_to?(:close) }
          `#{@exchange}.sendFile(#{status}, #{headers}, #{body.to_path.to_s}, #{closer})`
        elsif no_body?(status)
          send_parts(status, headers, body, head_only: true)
        elsif body.respond_to?(:to_ary)
          send_parts(status, headers, body)
        elsif body.respond_to?(:each)
          send_each(status, headers, body)
        elsif body.respond_to?(:call)
          `#{@exchange}.head(#{status}, #{headers})`
          body.call(Stream.new(@exchange, @env["rack.input"]))
        else
          raise InvalidResponse, "the body responds to neither each nor call: #{body.class}"
        end
      end

      private

      # The callable that takes the connection after the head, where the exchange can hand it
      # over (`up`'s): one under the rack.hijack response header (a partial hijack), or a 101's
      # body that responds to call and not to each (Rack 3's upgrade, as up_ruby takes it).
      def socket_callable(status, headers, body)
        return nil unless `typeof #{@exchange}.partialHijack === 'function'`

        callable = headers["rack.hijack"]
        return callable if callable.respond_to?(:call)
        return body if status == 101 && body.respond_to?(:call) && !body.respond_to?(:each)

        nil
      end

      # The head (without rack.hijack) goes out unframed, then the callable gets the socket as
      # a HijackedIO once the engine has handed it over; nothing when the client went first.
      # What the callable raises is reported and closes the socket. Over TLS there is no
      # socket to give (rack.hijack? is false): the app's error, a 500.
      def hand_over(status, headers, body, callable)
        unless @env["rack.hijack?"]
          raise NotImplementedError, "the response hands the connection to a callable, but this connection " \
                                     "cannot be hijacked (TLS: rack.hijack? is false)"
        end

        fields = headers.reject { |name, _| name == "rack.hijack" }
        socket = `#{@exchange}.partialHijack(#{status}, #{fields})`
        return if `#{socket} === null`

        io = HijackedIO.new(socket)
        report = @report
        start = lambda do
          callable.call(io)
        rescue ::Exception => e
          report&.call(e)
          io.close
        end
        `#{socket}.onAttach = #{start}`
        nil
      ensure
        body.close if body.respond_to?(:close) && !body.equal?(callable)
      end

      def check_status(status)
        return if status.is_a?(Integer) && status >= 100 && status <= 999

        raise InvalidResponse, "invalid response status #{status.inspect}"
      end

      # Exchange flattens it for Node (Array values as one line each) faster than a Ruby loop.
      def check_headers(headers)
        raise InvalidResponse, "headers must be a Hash, not #{headers.class}" unless headers.is_a?(Hash)
      end

      # A body the server sends from its file, as up_ruby does: one with to_path naming a file
      # and no to_ary, for a status that has content (HEAD included: it gets the length).
      def file_body?(status, body)
        status >= 200 && status != 204 && status != 304 && !body.respond_to?(:to_ary) &&
          body.respond_to?(:to_path) && File.file?(body.to_path.to_s)
      end

      # RFC 9110 §6.4.1 and §9.3.2: no content in a HEAD response, a 1xx, 204 or 304.
      def no_body?(status)
        @env["REQUEST_METHOD"] == "HEAD" || status < 200 || status == 204 || status == 304
      end

      def check_part(part)
        raise InvalidResponse, "the body yielded a #{part.class}, not a String" unless part.is_a?(String)
      end

      # An Array body at once. head_only: a response without content, whose body is closed
      # unread, as up_ruby does; HEAD gets the length GET would have when an Array body tells
      # it without running anything (sendParts computes it; Node sends no content for HEAD).
      def send_parts(status, headers, body, head_only: false)
        parts = if !head_only then body.to_ary
                elsif @env["REQUEST_METHOD"] == "HEAD" && body.respond_to?(:to_ary) then body.to_ary
                else []
                end
        parts.each { |part| check_part(part) }
        `#{@exchange}.sendParts(#{status}, #{headers}, #{parts})`
        nil
      ensure
        body.close if body.respond_to?(:close)
      end

      def send_each(status, headers, body)
        `#{@exchange}.head(#{status}, #{headers})`
        body.each do |part|
          check_part(part)
          `#{@exchange}.write(#{part})`
        end
        `#{@exchange}.end()`
        nil
      ensure
        body.close if body.respond_to?(:close)
      end

      # rack.response_finished: each callable, in reverse order, once the response is done
      # (or the connection gone). What one raises is the app's bug; it must not stop the rest.
      def when_finished(status, headers)
        callbacks = @env["rack.response_finished"]
        return if callbacks.nil? || callbacks.empty?

        env = @env
        run = lambda do
          callbacks.reverse_each do |callback|
            callback.call(env, status, headers, nil)
          rescue ::Exception
            nil
          end
        end
        `#{@exchange}.onFinished(#{run})`
      end
    end
  end
end
