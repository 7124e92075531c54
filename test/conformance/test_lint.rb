# frozen_string_literal: true

# Rack::Lint around an app: the suite's apps run under it on every runtime (Opal included,
# through opal/rack/lint.rb); this test says plainly when a runtime cannot load it.
require_relative "helper"

class TestConformanceLint < ConformanceTest
  def test_an_app_wrapped_in_rack_lint_is_served
    start_own_server("lint.ru")
    res = get("/")
    assert_equal [200, "linted"], [res.status, res.body]
  end
end
