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

  # Files of the suite a runtime does not run because what they test is not built on it yet:
  # runtime => file => why. Not a skip that hides a failure: the Rakefile leaves them out and
  # says so at each run, test_known_gaps.rb checks every file exists, and the README lists
  # them (gaps_markdown).
  NOT_BUILT = {}.freeze

  # The suite's files for runtime: all but those NOT_BUILT on it.
  def self.files_for(runtime, files)
    skipped = NOT_BUILT.fetch(runtime, {}).keys
    files.reject { |f| skipped.include?(File.basename(f)) }
  end

  # Names of the runtimes whose command is in the repository.
  def self.available
    RUNTIMES.select { |_name, exe| File.executable?(File.join(ROOT, exe)) }.keys
  end
end
