# frozen_string_literal: true

require "rack"
require "rack/builder"
require "up/early_hints"
require "up/node/handler"
require "up/node/input"
require "up/node/fast_inspect"
require "up/node/error_stream"
require "up/node/process"
require "up/node/monitor"
require "up/pub_sub"
require "up/node/pub_sub_server"
require "up/node/pub_sub_link"
require "up/node/redis_engine"

module Up
  # The Ruby half of up_node, compiled by Opal into the bundle before the app's config.ru
  # (Up::Node::Bundle). config.ru's Rack::Builder block stores the app here; each serving
  # process (node/up_node/worker.js) takes it and hands every request to an Up::Node::Handler.
  module Node
    class << self
      attr_accessor :app

      # An exception as one log entry: message, class and the backtrace.
      def describe(error)
        error.full_message(highlight: false, order: :top)
      end
    end
  end
end
