# frozen_string_literal: true

# The other path handler lookups take: rackup's Handler.get falls back to "rack/handler/NAME",
# and Rack 2's Rack::Handler (what older Rails servers call) looks only there. The handler
# itself is lib/up/rack_handler.rb.
require "up"
require "up/rack_handler"

module Rack
  module Handler
    Up = ::Up::RackHandler
    register :up, Up if respond_to?(:register)
  end
end
Rackup::Handler.register(:up, Up::RackHandler) if defined?(Rackup::Handler)
