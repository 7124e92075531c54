# frozen_string_literal: true

require "uri"

module Up
  # One address to serve, as -b/--bind or the config file's `bind` gives it: a host for TCP
  # ("localhost", "0.0.0.0", "::1" or "[::1]": every address it resolves to, on --port), a
  # tcp:// URL with or without a port ("tcp://127.0.0.1:8080", "tcp://[::1]"), or a Unix socket
  # ("unix:///run/up.sock", "unix://tmp/up.sock?mode=0660" for the file's permissions). An
  # ssl:// URL is a TCP bind that serves HTTPS, with its own certificate or -c/-k's
  # ("ssl://0.0.0.0:443?cert=/etc/up/cert.pem&key=/etc/up/key.pem", Puma's form; also ca= and
  # key_password_command=); -s makes every bind serve HTTPS (#with_tls).
  # Up::Options parses every bind to check it; Up::Binder opens them.
  class Bind
    class Error < StandardError; end

    # ssl:// parameters and the Up::TLSSetup settings they give.
    TLS_PARAMS = { "cert" => :cert_file, "key" => :key_file, "ca" => :ca_file,
                   "key_password_command" => :key_password_command }.freeze

    # tls: nil for plain HTTP, else the settings of ssl:// parameters (TLS_PARAMS' values; {}
    # when it has none: -c/-k's certificate).
    attr_reader :host, :port, :path, :mode, :tls

    # spec: the String as given; port: the port for a bind that names none (--port).
    def self.parse(spec, port)
      case spec
      when %r{\Aunix://(?<path>[^?]*)(?:\?(?<query>.*))?\z} then unix(spec, $~[:path], $~[:query])
      when %r{\Atcp://(?<rest>.*)\z} then tcp_url(spec, $~[:rest], port)
      when %r{\Assl://(?<rest>[^?]*)(?:\?(?<query>.*))?\z} then ssl_url(spec, $~[:rest], $~[:query], port)
      when %r{\A[A-Za-z][A-Za-z0-9+.-]*://}
        raise Error, "#{spec.inspect}: only tcp://, ssl:// and unix:// binds are supported"
      when /\A[^:\[]*:[^:]*\z/ then raise Error, "#{spec.inspect}: a port goes in a URL: tcp://#{spec}"
      else new(host: host_of(spec, spec), port: port)
      end
    end

    def self.unix(spec, path, query)
      raise Error, "#{spec.inspect}: no socket path" if path.empty?

      mode = nil
      query.to_s.split("&").each do |pair|
        name, value = pair.split("=", 2)
        raise Error, "#{spec.inspect}: unknown parameter #{name.inspect} (mode=0660 is the one)" unless name == "mode"
        raise Error, "#{spec.inspect}: mode must be octal, like 0660" unless value&.match?(/\A0?[0-7]{3}\z/)

        mode = value.to_i(8)
      end
      new(path: path, mode: mode)
    end

    def self.tcp_url(spec, rest, port)
      m = rest.match(/\A(?<host>\[[^\]]*\]|[^:\[\]]*)(?::(?<port>\d+))?\z/)
      raise Error, "#{spec.inspect}: expected tcp://HOST or tcp://HOST:PORT" unless m

      port = Integer(m[:port], 10) if m[:port]
      raise Error, "#{spec.inspect}: the port must be between 0 and 65535" unless (0..65_535).cover?(port)

      new(host: host_of(m[:host], spec), port: port)
    end

    def self.ssl_url(spec, rest, query, port)
      tls = {}
      query.to_s.split("&").each do |pair|
        name, value = pair.split("=", 2)
        key = TLS_PARAMS[name] or
          raise Error, "#{spec.inspect}: unknown parameter #{name.inspect} (#{TLS_PARAMS.keys.join(", ")})"
        raise Error, "#{spec.inspect}: #{name}= needs a value" if value.to_s.empty?

        tls[key] = URI.decode_www_form_component(value)
      end
      bind = tcp_url(spec, rest, port)
      new(host: bind.host, port: bind.port, tls: tls.freeze)
    end

    # A bare IPv6 address ("::1") is taken whole; brackets ("[::1]") are dropped.
    def self.host_of(text, spec)
      host = text.delete_prefix("[").delete_suffix("]")
      raise Error, "#{spec.inspect}: no host" if host.empty?
      raise Error, "#{spec.inspect}: unbalanced brackets" if text.count("[") != text.count("]")

      host
    end
    private_class_method :unix, :tcp_url, :ssl_url, :host_of

    def initialize(host: nil, port: nil, path: nil, mode: nil, tls: nil)
      @host = host
      @port = port
      @path = path
      @mode = mode
      @tls = tls
    end

    def unix?
      !@path.nil?
    end

    def tls?
      !@tls.nil?
    end

    # The same address serving HTTPS (-s): itself when it does already.
    def with_tls
      tls? ? self : Bind.new(host: @host, port: @port, path: @path, mode: @mode, tls: {}.freeze)
    end

    def to_s
      return "unix://#{@path}" if unix?

      "#{tls? ? "ssl" : "tcp"}://#{@host.include?(":") ? "[#{@host}]" : @host}:#{@port}"
    end
  end
end
