# frozen_string_literal: true
# backtick_javascript: true

module Up
  # rack.early_hints on the Opal runtimes, the same kind of object as up_ruby's
  # (ext/up/ruby/early_hints.c), so that an app sees one server whichever runs it: #call
  # with a Hash of headers sends a 103 Early Hints ahead of the response. node/up_node/
  # exchange.js and node/up/exchange.js make one per request around the function that
  # sends it.
  class EarlyHints
    # sender: a JS function of the headers Hash.
    def initialize(sender)
      @sender = sender
    end

    def call(headers)
      raise TypeError, "wrong argument type #{headers.class} (expected Hash)" unless headers.is_a?(Hash)

      `#{@sender}(#{headers})`
    end
  end
end
