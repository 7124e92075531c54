# frozen_string_literal: true

# The runtimes the conformance suite runs against: name => its command, relative to the
# repository. Read by test/conformance/helper.rb (UP_RUNTIME picks one) and by the Rakefile
# (test:conformance runs the suite once for each whose command exists, or for UP_RUNTIMES).
# Adding a runtime is one line here, plus its entry in known_gaps.rb if it has any.
module Conformance
  ROOT = File.expand_path("../..", __dir__)

  RUNTIMES = {
    "up_ruby" => "exe/up_ruby", # MRI, the C engine on epoll
    "up_node" => "exe/up_node", # Opal on Node's http module
    "up" => "exe/up"            # Opal on Node, the C engine as a Node-API addon
  }.freeze

  # Names of the runtimes whose command is in the repository.
  def self.available
    RUNTIMES.select { |_name, exe| File.executable?(File.join(ROOT, exe)) }.keys
  end
end
