# frozen_string_literal: true

# Rack::Lint around an app: the suite's apps use it on every runtime where it loads
# (apps/conformance_lint.rb); this test says whether the runtime is one, so a runtime that
# learns to load it shows up here.
require_relative "helper"

class TestConformanceLint < ConformanceTest
  def test_an_app_wrapped_in_rack_lint_is_served
    start_own_server("lint.ru")
    res = get("/")
    assert_equal [200, "linted"], [res.status, res.body]
  end
end
