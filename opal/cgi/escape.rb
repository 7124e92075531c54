# frozen_string_literal: true

# MRI's `cgi/escape` is a C extension; Opal ships CGI::Util in `cgi/util`, which has the
# escapeHTML that Rack::Utils.escape_html calls.
require 'cgi/util'
