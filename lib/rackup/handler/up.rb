# frozen_string_literal: true

# rackup finds handlers by this path; the handler itself is lib/up/rack_handler.rb.
require "up"
require "up/rack_handler"

module Rackup
  module Handler
    Up = ::Up::RackHandler
    register :up, Up if respond_to?(:register)
  end
end
