# frozen_string_literal: true

# URI::Generic: the parts of a parsed URI, readable and writable, with the default ports of
# http and https as on MRI (URI::HTTP/HTTPS are not separate classes here).
module URI
  class Generic
    DEFAULT_PORTS = { 'http' => 80, 'https' => 443, 'ws' => 80, 'wss' => 443 }.freeze

    attr_accessor :scheme, :userinfo, :host, :path, :opaque, :query, :fragment
    attr_writer :port

    def initialize(scheme, userinfo, host, port, registry, path, opaque, query, fragment, *)
      @scheme = scheme&.downcase
      @userinfo = userinfo
      @host = host
      @port = port && port.to_i
      @path = path || ''
      @opaque = opaque
      @query = query
      @fragment = fragment
    end

    def port
      @port || default_port
    end

    def default_port
      DEFAULT_PORTS[@scheme]
    end

    def hostname
      h = @host
      h && h.start_with?('[') && h.end_with?(']') ? h[1..-2] : h
    end

    def user
      @userinfo&.split(':', 2)&.first
    end

    def password
      @userinfo&.split(':', 2)&.[](1)
    end

    def absolute?
      !@scheme.nil?
    end

    def request_uri
      @query ? "#{@path.empty? ? '/' : @path}?#{@query}" : (@path.empty? ? '/' : @path)
    end

    def to_s
      s = +''
      s = "#{@scheme}:" if @scheme
      if @host
        auth = @userinfo ? "#{@userinfo}@#{@host}" : @host
        auth = "#{auth}:#{@port}" if @port && @port != default_port
        s = "#{s}//#{auth}"
      end
      s = "#{s}#{@path}"
      s = "#{s}?#{@query}" if @query
      s = "#{s}##{@fragment}" if @fragment
      s
    end

    def ==(other)
      other.is_a?(Generic) && to_s == other.to_s
    end

    def inspect
      "#<#{self.class} #{self}>"
    end
  end
end
