# frozen_string_literal: true

require 'rack/query_parser'
require 'rack/utils'
require 'rack_compat/bytes'

# Query strings, form bodies and cookie headers that arrive as bytes (a server hands Rack
# the bytes it read) are parsed as the UTF-8 text they encode. Rack splits them, and Opal's
# substrings of a binary string lose the binary mark, so a raw "name=J\xC3\xBCrgen" read as
# "JÃ¼rgen"; MRI gives "Jürgen". Bytes that are not valid UTF-8 are left as they are.
# These wrap Rack's methods (super), they do not replace them.
module RackCompat
  module TextQueryPairs
    private

    def each_query_pair(qs, separator, unescaper = nil, &block)
      super(RackCompat::Bytes.text(qs), separator, unescaper, &block)
    end
  end

  module TextCookies
    def parse_cookies_header(value)
      super(value && RackCompat::Bytes.text(value))
    end
  end
end

Rack::QueryParser.prepend(RackCompat::TextQueryPairs)
Rack::Utils.singleton_class.prepend(RackCompat::TextCookies)
