# frozen_string_literal: true

# Rack::Lint around the smallest app, on every runtime: TestConformanceLint starts it to tell
# whether the runtime can load Lint at all (apps/conformance_lint.rb).
require "rack/lint"

use Rack::Lint
run ->(_env) { [200, { "content-type" => "text/plain" }, ["linted"]] }
