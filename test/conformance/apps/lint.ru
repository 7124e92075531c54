# frozen_string_literal: true

# Rack::Lint around the smallest app, on every runtime: TestConformanceLint starts it to tell
# that the runtime loads Lint at all, before the other apps' tests use it.
require "rack/lint"

use Rack::Lint
run ->(_env) { [200, { "content-type" => "text/plain" }, ["linted"]] }
