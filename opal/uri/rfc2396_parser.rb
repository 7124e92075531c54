# frozen_string_literal: true
# backtick_javascript: true

# URI::RFC2396_Parser: escape/unescape for Rack::Utils.escape_path and a small `parse` for
# Rack::MockRequest. Opal has no URI library, so `parse` splits with the regexp of RFC 3986
# appendix B and leaves validation to the caller, as Rack only reads the parts back.
module URI
  class RFC2396_Parser
    # RFC 2396 §2.2 reserved and §2.3 unreserved characters, left alone by `escape`.
    UNSAFE = /[^\-_.!~*'()a-zA-Z\d;\/?:@&=+$,\[\]]/

    # RFC 3986 appendix B.
    URI_PARTS = /\A(?:([^:\/?#]+):)?(?:\/\/([^\/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?\z/

    def initialize(opts = {}); end

    def escape(str, unsafe = UNSAFE)
      URI.__bytes(str).map do |b|
        c = `String.fromCharCode(b)`
        b < 128 && !unsafe.match?(c) ? c : '%' + b.to_s(16).upcase.rjust(2, '0')
      end.join
    end

    def unescape(str, escaped = nil)
      enc = str.encoding.binary? ? Encoding::BINARY : Encoding::UTF_8
      URI.__string(URI.__percent_decode(str.to_s), enc)
    end

    def split(uri)
      m = URI_PARTS.match(uri.to_s) or raise InvalidURIError, "bad URI(is not URI?): #{uri.inspect}"
      userinfo = host = port = nil
      if m[2]
        auth = m[2]
        userinfo, auth = auth.split('@', 2) if auth.include?('@')
        if (hp = /\A(\[[^\]]*\]|[^:]*)(?::(\d*))?\z/.match(auth))
          host = hp[1]
          port = hp[2] unless hp[2].nil? || hp[2].empty?
        else
          raise InvalidURIError, "bad URI(is not URI?): #{uri.inspect}"
        end
      end
      [m[1], userinfo, host, port, nil, m[3], nil, m[4], m[5]]
    end

    def parse(uri)
      scheme, userinfo, host, port, registry, path, opaque, query, fragment = split(uri)
      Generic.new(scheme, userinfo, host, port, registry, path, opaque, query, fragment)
    end
  end

  RFC2396_PARSER = RFC2396_Parser.new
  DEFAULT_PARSER = RFC2396_PARSER
  Parser = RFC2396_Parser

  def self.parse(uri)
    RFC2396_PARSER.parse(uri)
  end

  def self.split(uri)
    RFC2396_PARSER.split(uri)
  end
end

module Kernel
  # Kernel#URI, as Rack::Recursive calls it.
  def URI(uri)
    uri.is_a?(URI::Generic) ? uri : URI.parse(uri)
  end
end
