# frozen_string_literal: true

# The entry of UP!'s Opal compatibility layer for the Rack gem: require it before `rack`.
# The stdlib shims (uri, tempfile, digest, zlib, cgi/escape) sit in `opal/` under their
# stdlib names and shadow Opal's stubs by load-path order; this file loads the patches that
# must be in place before Rack's own files run.
require 'nodejs'
require 'corelib/array/pack'
require 'corelib/string/unpack'
require 'rack_compat/regexp'
require 'rack_compat/regexp_source'
require 'rack_compat/string'
require 'rack_compat/module'
require 'rack_compat/encoding'
require 'rack_compat/string_io'
require 'rack_compat/file'

# Rack methods that mutate strings, rewritten; each file requires the Rack file it patches.
require 'rack_compat/utils'
require 'rack_compat/media_type'
require 'rack_compat/request'
require 'rack_compat/mock_response'
require 'rack_compat/common_logger'
require 'rack_compat/show_exceptions'
require 'rack_compat/show_status'
