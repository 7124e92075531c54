# frozen_string_literal: true

# Fixes of gaps in Opal 1.8 itself, found while porting Rack apps, each where Opal's own
# behaviour differs from MRI's in a way gems rely on. Each file fixes one gap, says why,
# and has an entry in opal/UPSTREAM.md written as a report Opal's maintainers could act
# on; test/opal/test_opal_fixes.rb runs each construct on MRI and on Opal and compares.
#
# Built right after Opal's corelib (Up::Node::OpalBuilder::PRELUDE), before any file it
# fixes is loaded (interpolation first: every later file calls it). Some fixes have a
# compile-time half in lib/up/node/rewriters/.
require 'opal_fixes/interpolation'
require 'opal_fixes/ivar_names'
require 'opal_fixes/require'
require 'opal_fixes/const_defined'
require 'opal_fixes/forwardable'
require 'opal_fixes/file_fnmatch'
require 'opal_fixes/rubygems'
require 'opal_fixes/process'
require 'opal_fixes/visibility'
require 'opal_fixes/string_eval'
require 'opal_fixes/mutable_strings'
require 'opal_fixes/catch_throw'
require 'opal_fixes/encode'
require 'opal_fixes/backtrace'
require 'opal_fixes/method_parameters'
require 'opal_fixes/define_method'
require 'opal_fixes/hash_each'
require 'opal_fixes/regexp_split'
require 'opal_fixes/regexp_replace'
require 'opal_fixes/array_block_args'
require 'opal_fixes/strftime_zone'
require 'opal_fixes/super_cache'
require 'opal_fixes/array_predicates'
require 'opal_fixes/send_call'
require 'opal_fixes/array_build'
require 'opal_fixes/const_lookup'
