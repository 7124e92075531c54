# frozen_string_literal: true

require "uri"

module Up
  module PubSub
    class Redis
      # Where a Redis server is and how to log in, from a URL: redis://[[user]:password@]host
      # [:port][/db] (port 6379 by default; a bracketed IPv6 host), or unix:///path and
      # redis+unix:///path for a socket file. The database number is accepted and ignored:
      # Redis pub/sub is not scoped by database. TLS (rediss://) is not supported. Redis.new
      # parses its url with Address.parse, which raises ArgumentError for anything else, so a
      # mistyped --redis-url stops the server at boot instead of retrying forever.
      class Address
        DEFAULT_PORT = 6379
        SCHEMES = %w[redis unix redis+unix].freeze

        attr_reader :host, :port, :path, :username, :password

        def self.parse(url)
          uri = URI.parse(url.to_s)
          raise ArgumentError, "Redis URL #{url.inspect}: TLS (rediss://) is not supported" if uri.scheme == "rediss"
          raise ArgumentError, "Redis URL #{url.inspect}: the scheme must be one of #{SCHEMES.join(", ")}" unless SCHEMES.include?(uri.scheme)
          raise ArgumentError, "Redis URL #{url.inspect}: a query or fragment is not supported" if uri.query || uri.fragment

          uri.scheme == "redis" ? tcp(uri, url) : unix(uri, url)
        rescue URI::Error => e
          raise ArgumentError, "Redis URL #{url.inspect}: #{e.message}"
        end

        def self.tcp(uri, url)
          raise ArgumentError, "Redis URL #{url.inspect}: no host" if uri.hostname.to_s.empty?
          raise ArgumentError, "Redis URL #{url.inspect}: the path must be a database number" unless %r{\A(?:/[0-9]*)?\z}.match?(uri.path)

          port = uri.port || DEFAULT_PORT
          raise ArgumentError, "Redis URL #{url.inspect}: port #{port} out of range" unless (1..65_535).cover?(port)

          username = uri.user.to_s.empty? ? nil : URI::DEFAULT_PARSER.unescape(uri.user)
          password = uri.password.to_s.empty? ? nil : URI::DEFAULT_PARSER.unescape(uri.password)
          raise ArgumentError, "Redis URL #{url.inspect}: a user needs a password" if username && password.nil?

          new(host: uri.hostname, port: port, username: username, password: password)
        end

        def self.unix(uri, url)
          raise ArgumentError, "Redis URL #{url.inspect}: a socket URL is unix:///absolute/path" unless uri.host.to_s.empty? && uri.userinfo.nil? && uri.path.to_s.start_with?("/")

          new(path: uri.path)
        end
        private_class_method :tcp, :unix

        def initialize(host: nil, port: nil, path: nil, username: nil, password: nil)
          @host = host
          @port = port
          @path = path
          @username = username
          @password = password
        end

        def unix?
          !@path.nil?
        end

        # The address for log lines, without the password.
        def to_s
          return "unix://#{@path}" if unix?

          login = if @username then "#{@username}:***@"
                  elsif @password then ":***@"
                  end
          host = @host.include?(":") ? "[#{@host}]" : @host
          "redis://#{login}#{host}:#{@port}"
        end
      end
    end
  end
end
