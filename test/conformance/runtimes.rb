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

  # Files of the suite not run over HTTP/2 (UP_H2=1) on any runtime, file => why; listed as
  # TLS_NOT_RUN is.
  H2_NOT_RUN = {
    "test_cli.rb" => "the command line's words, statuses and signals are the same whatever the protocol: over " \
                     "HTTP/2 it would only start its servers again",
    "test_websocket.rb" => "WebSockets are taken over HTTP/1.1 only: the servers offer no extended CONNECT (RFC 8441), " \
                           "and browsers open WebSockets over HTTP/1.1 (docs/http2.md)",
    "test_websocket_protocol.rb" => "WebSocket frames, over HTTP/1.1 only, as above",
    "test_pubsub.rb" => "its subscribers are WebSockets and event streams, over HTTP/1.1 only",
    "test_pubsub_cluster.rb" => "its subscribers are WebSockets, over HTTP/1.1 only",
    "test_sse.rb" => "an event stream's request is sent back to HTTP/1.1 (RST_STREAM HTTP_1_1_REQUIRED, docs/http2.md)"
  }.freeze

  # The passes over HTTP/2 that rake test:conformance runs beside the others, [runtime, over
  # TLS]: as many as keep the whole run within the time the passes over HTTP/1.1 took alone
  # (UP_H2=1 runs all of them).
  # Measured with two passes at a time: the six passes over HTTP/2 add about a fifth to the
  # wall time of those over HTTP/1.1, which stays under the time they took one at a time.
  H2_PASSES = RUNTIMES.keys.product([false, true]).freeze

  # The suite's files for runtime: all but those NOT_BUILT on it, over TLS (tls: true) all but
  # those TLS_NOT_RUN too, over HTTP/2 (h2: true) all but those H2_NOT_RUN too.
  def self.files_for(runtime, files, tls: false, h2: false)
    skipped = NOT_BUILT.fetch(runtime, {}).keys
    skipped += TLS_NOT_RUN.keys if tls
    skipped += H2_NOT_RUN.keys if h2
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
