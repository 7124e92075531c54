# frozen_string_literal: true

require_relative "runtimes"
require_relative "../support/invalid_requests"

# Where a runtime behaves differently from what the conformance suite asserts: runtime =>
# "TestClass#test_name" => why. Each listed test still runs and must still fail on that
# runtime (a fix shows up as a failure asking to remove the entry); test_known_gaps.rb checks
# that every entry names a test, and that docs/opal.md lists them as gaps_markdown writes them
# (rake test:conformance:gaps prints it).
module Conformance
  KNOWN_GAPS = {
    "up_ruby" => {},
    "up_node" => {
      "TestConformanceLimits#test_rejects_no_version_with_400" =>
        "llhttp reads a request line without a version as HTTP/0.9, so up_node's check of the version " \
        "(node/up_node/request_check.js) answers 505 where up_ruby answers 400",
      "TestConformanceLimits#test_rejects_two_spaces_after_method_with_400" =>
        "llhttp takes two spaces after the method, and Node keeps no raw request line for up_node to check, " \
        "so the app answers it with a 200",
      "TestConformanceRackEnv#test_env_offers_full_and_partial_hijack" =>
        "up_node has no hijacking yet: rack.hijack? is false and there is no rack.hijack",
      "TestConformanceRackEnv#test_env_has_the_same_keys_on_every_runtime" =>
        "up_node's env has no rack.hijack",
      "TestConformanceWebSocket#test_write_refuses_text_that_is_not_utf8" =>
        "up_node's String#force_encoding (opal/rack_compat/string.rb) turns bytes tagged UTF-8 into JS text, " \
        "each invalid sequence a U+FFFD, as Rack's code on Opal needs text: the bad bytes are gone before " \
        "write sees them, and the U+FFFD it gets is valid text, so it sends it",
      "TestConformanceWebSocket#test_a_blocked_callback_holds_up_no_other_connection" =>
        "one JS thread runs every callback and request of an up_node process, so a callback that blocks " \
        "holds up every connection of its worker (up_ruby runs callbacks on its app threads)",
      "TestConformanceWebSocketProtocol#test_lengths_not_in_their_minimal_form_close_with_1002" =>
        "the npm ws package reads a frame whose length is not in its minimal form (RFC 6455 §5.2) as a good one",
      "TestConformanceWebSocketProtocol#test_a_64_bit_length_with_its_top_bit_set_closes_with_1002" =>
        "the npm ws package refuses a 64-bit length with its top bit set as too large (1009), " \
        "not as malformed (1002)",
      "TestConformanceWebSocketProtocol#test_invalid_utf8_fails_before_the_message_ends" =>
        "the npm ws package checks the UTF-8 of a text message once the message is whole, so a message " \
        "left open after an invalid fragment is not failed (1007 comes with its last fragment)"
    },
    "up" => {
      "TestConformanceWebSocket#test_write_refuses_text_that_is_not_utf8" =>
        "up runs the app under Opal as up_node does, so as there String#force_encoding " \
        "(opal/rack_compat/string.rb) has made the bytes tagged UTF-8 JS text, each invalid sequence a " \
        "U+FFFD, before write sees them: the U+FFFD is valid text, and the engine sends it",
      "TestConformanceWebSocket#test_a_blocked_callback_holds_up_no_other_connection" =>
        "the engine runs on Node's loop and hands every event to the one JS thread that runs the app, " \
        "so a callback that blocks holds up every connection of its worker, as on up_node"
    }
  }.freeze

  # Where a runtime differs over TLS only (UP_TLS=1, helper.rb), as KNOWN_GAPS: runtime =>
  # "TestClass#test_name" => why. Over TLS a runtime's gaps are both lists.
  KNOWN_GAPS_OVER_TLS = {
    "up_ruby" => {
      "TestConformanceRackEnv#test_env_offers_full_and_partial_hijack" =>
        "no hijack over HTTPS: the TLS session lives in the engine, so the socket alone is of no use to the app " \
        "(docs/hijack.md): rack.hijack? is false and there is no rack.hijack",
      "TestConformanceRackEnv#test_env_has_the_same_keys_on_every_runtime" =>
        "no rack.hijack over HTTPS, as above"
    },
    "up_node" => {},
    "up" => {
      "TestConformanceRackEnv#test_env_offers_full_and_partial_hijack" =>
        "no hijack over HTTPS, as on up_ruby: the TLS session lives in the engine, so the socket alone is of no " \
        "use to the app (docs/hijack.md): rack.hijack? is false and there is no rack.hijack",
      "TestConformanceRackEnv#test_env_has_the_same_keys_on_every_runtime" =>
        "no rack.hijack over HTTPS, as above"
    }
  }.freeze

  # Tests not run over TLS on a runtime because there they neither pass nor fail every time, so
  # they can be neither run nor listed in KNOWN_GAPS_OVER_TLS: runtime => "TestClass#test_name"
  # => why. Reported at each run (ConformanceTest#run) and in docs/tls.md, as NOT_BUILT files are.
  NOT_RUN_OVER_TLS = {
    "up_node" => {
      "TestConformanceHTTP#test_client_half_close_still_gets_its_answers" =>
        "when the client's close_notify comes in the same read as its pipelined requests, Node's TLS socket " \
        "hands both to http in one turn of the loop, before the first answer's end lets the second out (over " \
        "TCP the end of stream comes a turn later): http drops the requests still unanswered and ends the " \
        "connection; when it comes in a later read, every answer goes out",
      "TestConformancePubSub#test_a_slow_subscriber_is_closed_with_1008" =>
        "up_node reads a subscriber's backlog as ws's bufferedAmount, and Node's TLS socket completes a write " \
        "the kernel took at once only on a later turn of the loop (setImmediate, in its TLSWrap): every 64 KB " \
        "message that one read from the publisher brings counts as pending at once, so the subscriber that " \
        "keeps up passes --ws-max-pending (256 KB) and is closed with 1008, or not, by how many came in that read"
    }
  }.freeze

  # Where a runtime differs over HTTP/2 (UP_H2=1, helper.rb), as KNOWN_GAPS: runtime (or
  # "RUNTIME over TLS" for h2 by ALPN alone) => "TestClass#test_name" => why. Over HTTP/2 these
  # are the gaps, alone: those of the lists above are HTTP/1.1's (its request line, hijacking,
  # WebSockets), and a gap that is the same over both protocols is listed in both.
  NODE_HEADER_LIST = "Node's nghttp2 refuses a header list past SETTINGS_MAX_HEADER_LIST_SIZE (--max-head-size) " \
                     "itself, with RST_STREAM ENHANCE_YOUR_CALM, before up_node sees the request: no 431 comes"
  NODE_RESET_BEFORE_END = "up_node's refusal on a stream (server.js, rejectStream) resets it with NO_ERROR once " \
                          "res.end's callback runs, and nghttp2 sends that RST_STREAM ahead of the empty DATA frame " \
                          "with END_STREAM still queued: the client gets the head and body but never the end of the " \
                          "response (RFC 9113 §8.1 asks for the whole response before the reset)"
  KNOWN_GAPS_OVER_H2 = {
    "up_ruby" => {},
    "up_node" => {
      "TestConformanceLimits#test_head_over_max_head_size_is_431" => NODE_HEADER_LIST,
      "TestConformanceLimits#test_request_line_over_max_head_size_is_431" => NODE_HEADER_LIST,
      "TestConformanceLimits#test_content_length_over_max_body_size_is_413_before_the_body_is_sent" => NODE_RESET_BEFORE_END,
      "TestConformanceLimits#test_expect_continue_over_max_body_size_is_413_without_a_100" => NODE_RESET_BEFORE_END,
      "TestConformanceLimits#test_chunked_body_growing_over_max_body_size_is_413" => NODE_RESET_BEFORE_END,
      "TestConformanceTimeouts#test_a_body_that_stops_short_is_408" => NODE_RESET_BEFORE_END
    },
    "up" => {}
  }.freeze

  # Tests of HTTP/1.1 itself, not run over HTTP/2 (UP_H2=1) on any runtime: "TestClass#test_name"
  # => what HTTP/2 has not. Reported at each run (ConformanceTest#run) and in docs/http2.md.
  MALFORMED_HTTP1 = "a malformed HTTP/1.1 request (test/support/invalid_requests.rb): HTTP/2's malformed requests are " \
                    "test/test_http2_cases.rb's"
  HTTP1_0 = "an HTTP/1.0 request: HTTP/2 has one version, and ends a body with END_STREAM, never with the connection"
  HTTP1_ONLY = {
    "TestConformanceHTTP#test_each_body_on_http10_is_close_delimited" => HTTP1_0,
    "TestConformanceHTTP#test_http10_closes_after_the_response" => HTTP1_0,
    "TestConformanceHTTP#test_http10_keep_alive_is_honoured" => HTTP1_0,
    "TestConformanceResponses#test_an_http_1_0_client_gets_no_early_hints" => HTTP1_0,
    "TestConformanceRackEnv#test_env_for_http_1_0_without_host" => HTTP1_0,
    "TestConformanceHTTP#test_empty_lines_before_the_request_line_are_ignored" =>
      "empty lines before a request line (RFC 9112 §2.2): HTTP/2 has no request line",
    "TestConformanceHTTP#test_status_lines_carry_rfc9110_reason_phrases" => "reason phrases: HTTP/2 has none (RFC 9113 §8.3.2)",
    "TestConformanceHTTP#test_connection_close_request_closes_after_the_response" =>
      "Connection: close: HTTP/2 forbids the field (RFC 9113 §8.2.2), and a connection ends with GOAWAY " \
      "(test/test_http2_cases.rb)",
    "TestConformanceHTTP#test_chunked_request_body_with_extensions_and_trailers_is_decoded" =>
      "chunked framing and its extensions (RFC 9112 §7.1): HTTP/2 frames a body as DATA",
    "TestConformanceHTTP#test_request_sent_one_byte_at_a_time_is_served" =>
      "the HTTP/1.1 parser fed a byte at a time: HTTP/2 comes in frames (test/test_http2_cases.rb)",
    "TestConformanceHTTP#test_client_half_close_still_gets_its_answers" =>
      "a TCP half-close after pipelined requests: an HTTP/2 client ends each stream with END_STREAM instead",
    "TestConformanceRackEnv#test_env_offers_full_and_partial_hijack" =>
      "hijacking takes the connection, which an HTTP/2 stream does not own: rack.hijack? is false on a stream " \
      "(docs/http2.md)",
    "TestConformanceLimits#test_request_after_a_refused_one_on_the_same_connection_is_never_served" =>
      "bytes behind a refused request on one HTTP/1.1 connection: HTTP/2 frames each request",
    "TestConformanceLimits#test_request_after_one_refused_for_its_target_is_never_served" =>
      "bytes behind a refused request on one HTTP/1.1 connection: HTTP/2 frames each request",
    "TestConformanceLimits#test_cl_te_smuggling_attempt_reaches_nothing" =>
      "Content-Length beside Transfer-Encoding (RFC 9112 §6.1): HTTP/2 frames each request, and forbids " \
      "Transfer-Encoding",
    "TestConformanceTimeouts#test_a_head_that_never_ends_is_408" =>
      "a head left unfinished (slowloris) is HTTP/1.1's: an HTTP/2 header block comes in frames, and a connection " \
      "that sends nothing is closed by --keepalive-timeout (test_an_idle_keep_alive_connection_is_closed_without_a_response)"
  }.merge(
    InvalidRequests::CASES.to_h do |name, (_, status)|
      ["TestConformanceLimits#test_rejects_#{name.downcase.gsub(/[^a-z0-9]+/, "_")}_with_#{status}", MALFORMED_HTTP1]
    end
  ).freeze

  # The list of the gaps in docs/opal.md: a line per runtime, a bullet per test with its reason, then
  # a bullet per file of the suite not run on it (runtimes.rb, NOT_BUILT).
  def self.gaps_markdown
    KNOWN_GAPS.map do |runtime, gaps|
      not_built = NOT_BUILT.fetch(runtime, {})
      next "- `#{runtime}`: none\n" if gaps.empty? && not_built.empty?

      "- `#{runtime}`:\n" + gaps.map { |test, reason| "  - `#{test}`: #{reason}\n" }.join +
        not_built.map { |file, reason| "  - not run: `test/conformance/#{file}`: #{reason}\n" }.join
    end.join
  end

  # The list of what differs over TLS in docs/tls.md: a line per runtime with its
  # KNOWN_GAPS_OVER_TLS, or why it has no TLS run (TLS_NOT_BUILT), then the tests
  # (NOT_RUN_OVER_TLS) and files (TLS_NOT_RUN) a TLS run leaves out.
  def self.tls_gaps_markdown
    lines = RUNTIMES.keys.map do |runtime|
      next "- `#{runtime}`: not run over TLS: #{TLS_NOT_BUILT[runtime]}\n" if TLS_NOT_BUILT.key?(runtime)

      gaps = KNOWN_GAPS_OVER_TLS.fetch(runtime, {})
      next "- `#{runtime}`: none\n" if gaps.empty?

      "- `#{runtime}`:\n" + gaps.map { |test, reason| "  - `#{test}`: #{reason}\n" }.join
    end
    lines.join + NOT_RUN_OVER_TLS.flat_map do |runtime, tests|
      tests.map { |test, reason| "- not run over TLS on `#{runtime}`: `#{test}`: #{reason}\n" }
    end.join + TLS_NOT_RUN.map { |file, reason| "- not run over TLS: `test/conformance/#{file}`: #{reason}\n" }.join
  end

  # The list of what differs over HTTP/2 in docs/http2.md: a line per runtime with its
  # KNOWN_GAPS_OVER_H2, then the files (H2_NOT_RUN) and tests (HTTP1_ONLY) an HTTP/2 run
  # leaves out.
  def self.h2_gaps_markdown
    lines = KNOWN_GAPS_OVER_H2.map do |runtime, gaps|
      next "- `#{runtime}`: none\n" if gaps.empty?

      "- `#{runtime}`:\n" + gaps.map { |test, reason| "  - `#{test}`: #{reason}\n" }.join
    end
    malformed, others = HTTP1_ONLY.partition { |_, reason| reason == MALFORMED_HTTP1 }
    lines.join + H2_NOT_RUN.map { |file, reason| "- not run over HTTP/2: `test/conformance/#{file}`: #{reason}\n" }.join +
      others.map { |test, reason| "- HTTP/1 only: `#{test}`: #{reason}\n" }.join +
      "- HTTP/1 only: the #{malformed.size} `TestConformanceLimits#test_rejects_*` tests: #{MALFORMED_HTTP1}\n"
  end
end
