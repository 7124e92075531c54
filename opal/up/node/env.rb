# frozen_string_literal: true
# backtick_javascript: true

require "up/node/input"

module Up
  module Node
    # Builds each request's Rack env from an Exchange (node/up_node/exchange.js) with the
    # keys, value types and values up_ruby gives (ext/up/ruby/env.c): strings are one char
    # per byte, as Node decodes heads (latin1). One per process, made by worker.js; it owns
    # the constant part of every env and a table of header names to env keys.
    class Env
      # Header names remembered with their keys; past this many, new names are computed each
      # time, so a client sending made-up names cannot grow the table without bound.
      MAX_KEYS = 500
      EMPTY_INPUT = Input.new("")

      def initialize(version, multiprocess, errors)
        @template = {
          "SCRIPT_NAME" => "",
          "SERVER_SOFTWARE" => "UP! #{version}",
          "GATEWAY_INTERFACE" => "CGI/1.2",
          "rack.version" => [1, 3].freeze,
          "rack.url_scheme" => "http",
          "rack.errors" => errors,
          "rack.multithread" => false, # one JS thread runs every app call
          "rack.multiprocess" => multiprocess,
          "rack.run_once" => false,
          "rack.hijack?" => false
        }
        @keys = { "content-length" => "CONTENT_LENGTH", "content-type" => "CONTENT_TYPE" }
      end

      def build(exchange)
        env = @template.dup
        target = `#{exchange}.req.url`
        authority, path, query = split_target(target)
        env["REQUEST_METHOD"] = `#{exchange}.req.method`
        env["SERVER_PROTOCOL"] = `#{exchange}.req.httpVersion` == "1.0" ? "HTTP/1.0" : "HTTP/1.1"
        env["PATH_INFO"] = path
        env["REQUEST_PATH"] = path
        env["QUERY_STRING"] = query
        env["REQUEST_URI"] = target
        env["REMOTE_ADDR"] = `#{exchange}.req.socket.remoteAddress || ""`
        body = `#{exchange}.body`
        env["rack.input"] = body.empty? ? EMPTY_INPUT : Input.new(body)
        env["rack.early_hints"] = early_hints(exchange)
        env["rack.response_finished"] = []
        add_headers(env, `#{exchange}.req.rawHeaders`)
        # RFC 9112 §3.2.2: the authority of an absolute-form target replaces Host.
        env["HTTP_HOST"] = authority if authority
        env["CONTENT_LENGTH"] = body.length.to_s if env["HTTP_TRANSFER_ENCODING"]
        add_server_name(env, exchange)
        env
      end

      private

      # [authority or nil, path, query] of a request target (RFC 9112 §3.2).
      def split_target(target)
        authority = nil
        if target.start_with?("http://", "https://")
          rest = target.sub(%r{\Ahttps?://}, "")
          slash = rest.index(%r{[/?]}) || rest.length
          authority = rest[0, slash]
          target = rest[slash, rest.length]
        end
        path, _, query = target.partition("?")
        [authority, path, query]
      end

      # Repeated fields become one value, joined as RFC 9110 §5.3 says (cookies with "; ",
      # RFC 6265 §5.4). "X_Forwarded_For" and "X-Forwarded-For" share one key; a client must
      # not override what a proxy set, so an underscore spelling counts only when no dash
      # spelling came (the first of them wins).
      def add_headers(env, raw)
        underscored = nil
        i = 0
        while i < raw.length
          name = raw[i].downcase
          value = raw[i + 1]
          i += 2
          if name.include?("_")
            (underscored ||= []) << [name, value]
            next
          end
          key = key_for(name)
          old = env[key]
          env[key] = old ? "#{old}#{name == "cookie" ? "; " : ", "}#{value}" : value
        end
        underscored&.each do |(name, value)|
          key = key_for(name)
          env[key] = value unless env.key?(key)
        end
      end

      def key_for(name)
        key = @keys[name]
        return key if key

        key = "HTTP_#{name.upcase.tr("-", "_")}"
        @keys[name] = key if @keys.size < MAX_KEYS
        key
      end

      # SERVER_NAME and SERVER_PORT from Host, else from the address the request came in on.
      def add_server_name(env, exchange)
        host = env["HTTP_HOST"]
        unless host
          env["SERVER_NAME"] = `#{exchange}.listener.host`
          env["SERVER_PORT"] = `String(#{exchange}.listener.port)`
          return
        end
        name, port = split_authority(host)
        env["SERVER_NAME"] = name.empty? ? "localhost" : name
        env["SERVER_PORT"] = port.empty? ? "80" : port
      end

      # As up_http1_split_authority: brackets kept around an IPv6 host, the port after them
      # or after the first colon. No endless ranges (`host[n..]`) here or on any request path:
      # Opal's Range.new(n, nil) raises and rescues an ArgumentError inside (Number#<=> nil),
      # which cost a third of a hello world's time.
      def split_authority(host)
        if host.start_with?("[")
          close = host.index("]") || (host.length - 1)
          [host[0, close + 1], host[close + 1, host.length].delete_prefix(":")]
        elsif (colon = host.index(":"))
          [host[0, colon], host[colon + 1, host.length]]
        else
          [host, ""]
        end
      end

      def early_hints(exchange)
        lambda do |headers|
          flat = []
          headers.each { |name, value| Array(value).each { |v| flat << name.to_s << v.to_s } }
          `#{exchange}.earlyHints(#{flat})`
          nil
        end
      end
    end
  end
end
