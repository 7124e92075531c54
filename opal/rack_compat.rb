# frozen_string_literal: true

# The entry of UP!'s Opal compatibility layer for the Rack gem (see opal/README.md).
#
# A build loads it as its own unit after Opal's corelib and before the app: it replaces
# Opal.regexp, which each compiled file binds when it loads, so only files loaded after it
# get Ruby regexp semantics. The stdlib shims (uri, tempfile, digest, zlib, cgi/escape) and
# the replaced Rack files (rack/lint, rack/multipart/parser) sit in opal/ under their own
# names and win by load-path order; this file loads the patches.

# Opal's Node platform, pack/unpack, and Mutex for Rack::Lock (Node runs Ruby on one thread).
require 'nodejs'
require 'corelib/array/pack'
require 'corelib/string/unpack'
require 'thread'

# Core behaviour Rack relies on, fixed or added.
require 'rack_compat/regexp'
require 'rack_compat/regexp_source'
require 'rack_compat/string'
require 'rack_compat/string_plus'
require 'rack_compat/bytesize'
require 'rack_compat/module'
require 'rack_compat/format'
require 'rack_compat/errno'
require 'rack_compat/time'
require 'rack_compat/encoding'
require 'rack_compat/string_io'
require 'rack_compat/file'
require 'rack_compat/node_paths'
require 'rack_compat/string_scanner'
require 'rack_compat/pack'
require 'rack_compat/json'
# MRI's Marshal (rack-session's default cookie coder), in our own code (opal/marshal.rb).
require 'marshal'

# Rack methods that mutate strings or need runtime ERB, rewritten; each file requires the
# Rack file it patches.
require 'rack_compat/utils'
require 'rack_compat/byte_input'
require 'rack_compat/media_type'
require 'rack_compat/request'
require 'rack_compat/mock_response'
require 'rack_compat/common_logger'
require 'rack_compat/multipart_generator'
require 'rack_compat/rewindable_input'
require 'rack_compat/directory'
