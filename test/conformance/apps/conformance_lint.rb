# frozen_string_literal: true

# Whether the conformance apps run under Rack::Lint: on every runtime where it loads. On Opal
# it does not yet (opal/rack/lint.rb builds a regexp from URI_PARSER.make_regexp, which the
# URI shim in opal/uri lacks), so there the apps run bare, and apps/lint.ru, which uses
# Rack::Lint whatever the runtime, is the known gap that says so (known_gaps.rb).
CONFORMANCE_LINT = RUBY_ENGINE != "opal"
require "rack/lint" if CONFORMANCE_LINT
