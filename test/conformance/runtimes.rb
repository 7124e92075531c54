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
  # says so at each run, test_known_gaps.rb checks every file exists, and docs/opal.md lists
  # them (gaps_markdown).
  NOT_BUILT = {}.freeze

  # The runtimes the suite does not run over TLS (UP_TLS=1, helper.rb), runtime => why: the
  # Rakefile's TLS pass leaves them out and says so, and docs/tls.md lists them
  # (Conformance.tls_gaps_markdown).
  TLS_NOT_BUILT = {}.freeze

  # Files of the suite the TLS pass does not run on any runtime, file => why; listed as
  # NOT_BUILT is.
  TLS_NOT_RUN = {
    "test_cli.rb" => "the command line's words, statuses and signals are the same with -s (the TLS options' own " \
                     "errors are test/test_tls_cli.rb's, test/test_up_node_tls.rb's and test/test_up_tls.rb's): over TLS it would only " \
                     "start its servers a second time"
  }.freeze

  # The suite's files for runtime: all but those NOT_BUILT on it, and over TLS (tls: true) all
  # but those TLS_NOT_RUN too.
  def self.files_for(runtime, files, tls: false)
    skipped = NOT_BUILT.fetch(runtime, {}).keys
    skipped += TLS_NOT_RUN.keys if tls
    files.reject { |f| skipped.include?(File.basename(f)) }
  end

  # Names of the runtimes whose command is in the repository.
  def self.available
    RUNTIMES.select { |_name, exe| File.executable?(File.join(ROOT, exe)) }.keys
  end

  # Names of the runtimes the TLS pass runs on: those available but TLS_NOT_BUILT.
  def self.available_over_tls
    available - TLS_NOT_BUILT.keys
  end
end
