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

    # MRI's make_regexp (RFC 2396 absoluteURI: scheme, then opaque part or hierarchical
    # part), written out without the x-mode layout, which JS regexps cannot read. Rack::Lint
    # interpolates it to recognise absolute-form request targets.
    ABS_URI_SOURCE = (
      '([a-zA-Z][\\-+.a-zA-Z\\d]*):(?:((?:[\\-_.!~*\'()a-zA-Z\\d;?:@&=+$,]|%[a-fA-F\\d]{2})(?:[' \
      '\\-_.!~*\'()a-zA-Z\\d;/?:@&=+$,\\[\\]]|%[a-fA-F\\d]{2})*)|(?:(?://(?:(?:(?:((?:[\\-_.!~*' \
      '\'()a-zA-Z\\d;:&=+$,]|%[a-fA-F\\d]{2})*)@)?(?:((?:(?:[a-zA-Z0-9\\-.]|%\\h\\h)+|\\d{1,3}' \
      '\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}|\\[(?:(?:[a-fA-F\\d]{1,4}:)*(?:[a-fA-F\\d]{1,4}|\\d{1,' \
      '3}\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3})|(?:(?:[a-fA-F\\d]{1,4}:)*[a-fA-F\\d]{1,4})?::(?:(?:' \
      '[a-fA-F\\d]{1,4}:)*(?:[a-fA-F\\d]{1,4}|\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}\\.\\d{1,3}))?)\\])' \
      ')(?::(\\d*))?))?|((?:[\\-_.!~*\'()a-zA-Z\\d$,;:@&=+]|%[a-fA-F\\d]{2})+))|(?!//))(/(?:[\\' \
      '-_.!~*\'()a-zA-Z\\d:@&=+$,]|%[a-fA-F\\d]{2})*(?:;(?:[\\-_.!~*\'()a-zA-Z\\d:@&=+$,]|%[a-f' \
      'A-F\\d]{2})*)*(?:/(?:[\\-_.!~*\'()a-zA-Z\\d:@&=+$,]|%[a-fA-F\\d]{2})*(?:;(?:[\\-_.!~*\'(' \
      ')a-zA-Z\\d:@&=+$,]|%[a-fA-F\\d]{2})*)*)*)?)(?:\\?((?:[\\-_.!~*\'()a-zA-Z\\d;/?:@&=+$,\\[' \
      '\\]]|%[a-fA-F\\d]{2})*))?)(?:\\#((?:[\\-_.!~*\'()a-zA-Z\\d;/?:@&=+$,\\[\\]]|%[a-fA-F\\d]' \
      '{2})*))?'
    ).freeze

    def initialize(opts = {}); end

    def make_regexp(schemes = nil)
      raise NotImplementedError, 'make_regexp with schemes' if schemes

      @abs_uri ||= Regexp.new(ABS_URI_SOURCE)
    end

    # Some of the named patterns MRI's parser keeps (Mustermann escapes route characters
    # with regexp[:UNSAFE]).
    def regexp
      @regexp ||= { UNSAFE: UNSAFE, ESCAPED: /%[a-fA-F\d]{2}/, ABS_URI: make_regexp }.freeze
    end

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
