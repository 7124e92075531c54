# frozen_string_literal: true

# The entry of UP!'s Opal compatibility layer for the Rack gem (see opal/README.md).
#
# A build loads it as its own unit after Opal's corelib and before the app: it replaces
# Opal.regexp, which each compiled file binds when it loads, so only files loaded after it
# get Ruby regexp semantics. The stdlib shims (uri, tempfile, digest, zlib, cgi/escape) sit
# in opal/ under their own names and win by load-path order; this file loads the rest. Rack's
# own files that cannot work as written are patched when the app is built
# (lib/up/node/rewriters/gem_patches.rb), not copied here.

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

# Rack parsing of query strings and cookies, reading bytes that form UTF-8 as text.
require 'rack_compat/byte_input'
# The access log's time, once a second (Rack::CommonLogger's, patched at build time).
require 'rack_compat/log_time'
