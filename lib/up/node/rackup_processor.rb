# frozen_string_literal: true

require "opal/builder"
require_relative "ruby_processor"

module Up
  module Node
    # Lets Opal::Builder compile a file named *.ru: config.ru, wrapped by Up::Node::Bundle as
    # a Rack::Builder block. Opal picks a processor by the file's extension and knows only .rb
    # and .opal; registering this one (Opal's documented extension point) keeps the real path,
    # so compile errors and backtraces name config.ru and its own line numbers. It compiles
    # as Up::Node::RubyProcessor does.
    class RackupProcessor < RubyProcessor
      handles :ru

      def self.match_regexp
        @match_regexp
      end
    end
  end
end
