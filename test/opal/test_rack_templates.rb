# frozen_string_literal: true

require_relative "helper"
require_relative "support/rack_templates"

# The ERB pages Opal compiles at build time are the installed Rack's templates.
class TestOpalRackTemplates < Minitest::Test
  def test_committed_opalerb_pages_match_installed_rack
    RackTemplates::SOURCES.each_key do |name|
      assert_equal RackTemplates.render(name), File.read(RackTemplates.target(name)),
                   "#{name}.opalerb is stale: run ruby test/opal/support/rack_templates.rb"
    end
  end
end
