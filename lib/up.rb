# frozen_string_literal: true

# UP!, a Rack server whose network work is done by a native engine (ext/up). Requiring this
# loads the engine and the Ruby side of Up::Server.
require_relative "up/version"
require_relative "up/server"
