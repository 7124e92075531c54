# frozen_string_literal: true

require "rbconfig"
require_relative "cli_process"
require_relative "up_node_process"
require_relative "../conformance/runtimes"

# Starts a config.ru with one runtime's command (a name of Conformance::RUNTIMES: up_ruby,
# up_node, up) as a user does, on a free loopback port, for the tests that run the examples
# on each runtime. up_node and up build the same Opal bundle, into the up_node tests' cache,
# so an app compiles once a test run whichever starts it first.
module RuntimeProcess
  # A CLIProcess running rackup with args before it, its listening line not yet awaited.
  def self.spawn(runtime, rackup, *args)
    exe = File.join(CLIProcess::ROOT, Conformance::RUNTIMES.fetch(runtime))
    CLIProcess.new("-b", "127.0.0.1", "-p", "0", *args, rackup, command: [RbConfig.ruby, exe],
                   env: { "XDG_CACHE_HOME" => UpNodeProcess::CACHE }, wait: false)
  end
end
