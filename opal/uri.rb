# frozen_string_literal: true
# backtick_javascript: true

# Shadows Opal's `uri` stub, which has only URI.decode_www_form. Rack::Utils needs the
# form-component helpers (escape/unescape), URI::RFC2396_PARSER (escape_path/unescape_path),
# and Rack::MockRequest needs URI::Parser#parse. Percent-encoding works on UTF-8 bytes as on
# MRI: a string in a binary encoding is taken as one byte per character.
require 'uri/common'
require 'uri/generic'
require 'uri/rfc2396_parser'
