# frozen_string_literal: true

require_relative "launcher"

module Up
  module Node
    # The MRI front half of `up`: as up_node's (Up::Node::Launcher: the same Opal bundle, the
    # same options as JSON), but Node runs node/up/main.js, which serves through the UP!
    # engine compiled as a Node-API addon (lib/up/up.node, built by ext/up/node/build) instead
    # of Node's http module.
    class AddonLauncher < Launcher
      MAIN = File.join(Bundle::ROOT, "node", "up", "main.js")
      PROGRAM = "up"
      ADDON = File.join(Bundle::ROOT, "lib", "up", "up.node")

      def run
        raise StartError, "#{ADDON} is missing: run bin/setup (or ext/up/node/build)" unless File.file?(ADDON)
        raise StartError, "-w is not supported by up yet: one process serves" if @options[:workers].to_i > 1

        super
      end
    end
  end
end
