# frozen_string_literal: true

# HTTP/2 conformance cases of our own, written from the sections h2spec covers (RFC 9113, and
# RFC 7541 for HPACK): frames written by hand with support/h2_case_client.rb over real
# sockets, each case one connection, the server's answer read as frames. A connection error
# must come as GOAWAY with the code the RFC names (a close without GOAWAY fails, except for a
# preface that is not HTTP/2 at all); a stream error as RST_STREAM with its code, or as a
# connection error, which §5.4.2 allows in its place.
#
# Each runtime of UP_H2_RUNTIMES (names of Conformance::RUNTIMES, comma-separated; all three
# unless given) runs every case twice: h2c by prior knowledge on a plain port, and h2 chosen
# by ALPN over TLS. A runtime listed runs, with or without HTTP/2: one that lacks it fails.
#
#   UP_H2_RUNTIMES=up_node,up_ruby bundle exec ruby -Itest -Ilib test/test_http2_cases.rb
require "socket"
require_relative "helper"
require_relative "support/h2_case_client"
require_relative "support/runtime_process"
require_relative "support/test_certificates"
require_relative "support/tls_client_socket"

module HTTP2Cases
  RUNTIMES = ENV.fetch("UP_H2_RUNTIMES", "up_ruby,up,up_node").split(/[\s,]+/).reject(&:empty?)
  APP = File.join(CLIProcess::ROOT, "test/rackup/http2_cases.ru")
  ERRORS = H2CaseClient::ERRORS
  MAX_WINDOW = (2**31) - 1
  BIG = "0123456789" * 2000 # /big's body (http2_cases.ru)
  unknown = RUNTIMES - Conformance::RUNTIMES.keys
  abort "UP_H2_RUNTIMES: #{unknown.join(", ")}: not one of #{Conformance::RUNTIMES.keys.join(", ")}" if unknown.any?

  # Cases a runtime fails today, runtime => case => why ("RUNTIME over TLS" for those that fail
  # over TLS only). Not skipped: each must still fail (Cases#run), so a fix shows as a failure
  # that says to remove its line. They wait 1 s for what does not come, not 3.
  NODE_FORGETS_CLOSED_STREAMS = "Node's nghttp2 session keeps no closed streams, so frames on one are dropped " \
                                "without an error (a bare Node http2 server does the same)"
  NGHTTP2_IGNORES_OLD_STREAM_IDS = "nghttp2 ignores a HEADERS whose stream id is below one already used " \
                                   "instead of answering it with a connection error (on purpose: the stream may " \
                                   "have been closed and forgotten)"
  KNOWN_GAPS = {
    "up_ruby" => { "test_5_1_1_a_stream_identifier_below_one_used_is_a_protocol_error" => NGHTTP2_IGNORES_OLD_STREAM_IDS },
    "up" => { "test_5_1_1_a_stream_identifier_below_one_used_is_a_protocol_error" => NGHTTP2_IGNORES_OLD_STREAM_IDS },
    "up_node" => {
      "test_5_1_1_a_stream_identifier_below_one_used_is_a_protocol_error" => NODE_FORGETS_CLOSED_STREAMS,
      "test_5_1_data_after_rst_stream_is_stream_closed" => NODE_FORGETS_CLOSED_STREAMS,
      "test_5_1_headers_after_rst_stream_is_stream_closed" => NODE_FORGETS_CLOSED_STREAMS,
      "test_5_1_data_on_a_closed_stream_is_stream_closed" => NODE_FORGETS_CLOSED_STREAMS,
      "test_5_1_headers_on_a_closed_stream_is_stream_closed" => NODE_FORGETS_CLOSED_STREAMS,
      "test_6_7_a_ping_ack_is_not_answered" => "Node ends the connection (GOAWAY PROTOCOL_ERROR) on a PING ACK it " \
                                               "did not ask for, on purpose, where RFC 9113 §6.7 says to ignore it",
      "test_6_9_2_a_settings_change_that_overflows_a_stream_window_is_a_flow_control_error" =>
        "Node's nghttp2 resets the stream (RST_STREAM FLOW_CONTROL_ERROR) where §6.9.2 asks for a connection " \
        "error (a bare Node http2 server alike)",
      "test_8_2_1_a_field_value_with_a_line_feed_is_malformed" => "Node neither resets the stream nor answers it " \
                                                                  "(a bare Node http2 server alike)"
    },
    "up_node over TLS" => {
      "test_5_1_2_more_streams_than_max_concurrent_streams_are_refused" =>
        "over TLS, Node closes a connection that broke the protocol while streams were open without its GOAWAY " \
        "reaching the client (h2c gets it; a bare Node http2 server over TLS alike)"
    }
  }.freeze
  EXPECTED_FAILURES = {}
  Minitest.after_run do
    unless EXPECTED_FAILURES.empty?
      puts "\nHTTP/2 cases that failed as expected (HTTP2Cases::KNOWN_GAPS): #{EXPECTED_FAILURES.size}"
      EXPECTED_FAILURES.sort.each { |test, reason| puts "  #{test}: #{reason}" }
    end
  end

  def self.known_gap(runtime, tls, name)
    KNOWN_GAPS.fetch(runtime, {})[name] || (tls && KNOWN_GAPS.fetch("#{runtime} over TLS", {})[name])
  end

  # One server per runtime and transport for all the cases, started by the first case.
  SERVERS = {}
  Minitest.after_run { SERVERS.each_value(&:stop) }

  def self.server(runtime, tls)
    SERVERS[[runtime, tls]] ||= begin
      args = tls ? ["-s", "-c", certificate.cert_file, "-k", certificate.key_file] : []
      RuntimeProcess.spawn(runtime, APP, "-w", "1", *args).tap { |server| server.wait_listening(timeout: 60) }
    end
  end

  def self.certificate
    @certificate ||= TestCertificates.ca.issue("localhost")
  end

  # The cases; a class per runtime and transport includes them (at the end of this file).
  module Cases
    include HTTPClient

    def teardown
      close_sockets
      super
    end

    # A known gap must fail: its failures become a pass noted at exit, a pass a failure that
    # says to remove it.
    def run
      reason = HTTP2Cases.known_gap(self.class::RUNTIME, self.class::TLS, name)
      return super unless reason

      @gap = true
      super
      if failures.empty?
        failures << Minitest::Assertion.new("#{self.class}##{name} passes: remove it from HTTP2Cases::KNOWN_GAPS (#{reason})")
      else
        failures.clear
        EXPECTED_FAILURES["#{self.class}##{name}"] = reason
      end
      Minitest::Result.from(self)
    end

    def scheme
      self.class::TLS ? "https" : "http"
    end

    # A new connection, the handshake done; settings: the client's first SETTINGS.
    def h2(settings: {})
      H2CaseClient.new(open_socket, scheme: scheme, settings: settings, timeout: @gap ? 1 : 3)
    end

    def request(...)
      H2CaseClient.request_fields(scheme, ...)
    end

    # A connection on which nothing is sent yet.
    def open_socket
      server = HTTP2Cases.server(self.class::RUNTIME, self.class::TLS)
      return connect(server.port) unless self.class::TLS

      socket = TLSClientSocket.open(server.port, TestCertificates.ca.client_context(alpn_protocols: ["h2"]))
      (@sockets ||= []) << socket
      assert_equal "h2", socket.alpn_protocol, "ALPN chose h2"
      socket
    end

    def describe(event)
      return "a response" if event.is_a?(H2CaseClient::Response)

      case event.type
      when :goaway then "GOAWAY #{ERRORS.key(event.goaway_code) || event.goaway_code}"
      when :rst_stream then "RST_STREAM #{ERRORS.key(event.payload.unpack1("N")) || event.payload.unpack1("N")} on stream #{event.stream}"
      when :closed, :timeout then event.type.to_s
      else "#{event.type} on stream #{event.stream}"
      end
    end

    # §5.4.1: GOAWAY with one of codes.
    def assert_connection_error(client, *codes)
      event = client.connection_end
      assert_equal :goaway, event.type, "a connection error #{codes.join(" or ")}: got #{describe(event)}"
      assert_includes codes.map { |c| ERRORS.fetch(c) }, event.goaway_code, "expected #{codes.join(" or ")}: got #{describe(event)}"
      event
    end

    # §5.4.2: RST_STREAM on stream with one of codes, or a connection error with one of them.
    def assert_stream_error(client, stream, *codes)
      event = client.stream_reset(stream)
      assert_includes %i[rst_stream goaway], event.type, "a stream error #{codes.join(" or ")} on stream #{stream}: got #{describe(event)}"
      code = event.type == :goaway ? event.goaway_code : event.payload.unpack1("N")
      assert_includes codes.map { |c| ERRORS.fetch(c) }, code, "expected #{codes.join(" or ")}: got #{describe(event)}"
    end

    # A PING answered: the connection goes on.
    def assert_alive(client)
      event = client.ping
      assert_equal :ping, event.type, "the connection goes on (a PING answered): got #{describe(event)}"
    end

    # stream's response is a 200 with body (when given).
    def assert_answered(client, stream, body = nil)
      response = client.response(stream)
      assert_kind_of H2CaseClient::Response, response, "a response on stream #{stream}: got #{describe(response)}"
      assert_equal "200", response.status
      assert_equal body, response.body if body
      response
    end

    def post_fields(client, path = "/", extra: [])
      client.request_fields(path, method: "POST", extra: extra)
    end

    # ---- §3.4 the connection preface

    def test_3_4_the_server_s_first_frame_is_settings_and_it_acknowledges_ours
      socket = open_socket
      H2CaseClient.new(socket, scheme: scheme, handshake: false).write_raw(H2CaseClient.preface)
      first = H2Frames.new(socket, greet: false).read_frame
      refute_nil first, "the server's preface"
      assert_equal [H2CaseClient::TYPES[:settings], 0, 0], [first.type, first.flags, first.stream]
      assert_equal 0, first.payload.bytesize % 6
    end

    # Not HTTP/2's preface: the connection ends (GOAWAY PROTOCOL_ERROR, or a close where the
    # bytes were never taken for HTTP/2).
    def test_3_4_an_invalid_preface_ends_the_connection
      client = H2CaseClient.new(open_socket, scheme: scheme, handshake: false)
      client.write_raw("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n#{"\x00" * 9}")
      event = client.wait_for(timeout: 5) { |e| e.type == :goaway }
      if event.type == :goaway
        assert_equal ERRORS[:protocol_error], event.goaway_code
      else
        assert_equal :closed, event.type, "the connection ends: got #{describe(event)}"
      end
    end

    def test_3_4_a_first_frame_other_than_settings_is_a_protocol_error
      client = H2CaseClient.new(open_socket, scheme: scheme, handshake: false)
      client.write_raw(H2CaseClient.preface)
      client.write(:ping, 0, 0, "12345678")
      assert_connection_error(client, :protocol_error)
    end

    # ---- §4.1 frame format

    def test_4_1_a_frame_of_an_unknown_type_is_ignored
      client = h2
      client.write(0xfa, 0, 0, "what is this")
      client.write(0xfb, 0xff, 1, "nor this")
      assert_alive(client)
      client.headers(1)
      assert_answered(client, 1, "hello")
    end

    def test_4_1_undefined_flags_are_ignored
      client = h2
      client.write(:ping, 0xfe, 0, "flagged!")
      event = client.wait_for { |e| e.type == :ping }
      assert_equal [:ping, "flagged!", 1], [event.type, event.payload, event.flags & 1], "a PING ACK: got #{describe(event)}"
      client.headers(1, flags: 0xd0) # undefined HEADERS flags 0x10, 0x40, 0x80
      assert_answered(client, 1, "hello")
    end

    def test_4_1_the_reserved_bit_of_the_stream_identifier_is_ignored
      client = h2
      client.headers(0x80000001)
      assert_answered(client, 1, "hello")
    end

    # ---- §4.2 frame size

    def test_4_2_data_larger_than_max_frame_size_is_a_frame_size_error
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.data(1, "x" * 16_385)
      assert_stream_error(client, 1, :frame_size_error)
    end

    def test_4_2_headers_larger_than_max_frame_size_is_a_connection_error
      client = h2
      client.headers(1, client.request_fields("/", extra: [["x-big", "b" * 16_400]]))
      assert_connection_error(client, :frame_size_error)
    end

    def test_4_2_a_frame_of_exactly_max_frame_size_is_taken
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.data(1, "x" * 16_384)
      assert_answered(client, 1, "16384")
    end

    # ---- §4.3 field section compression

    def test_4_3_a_header_block_that_does_not_decode_is_a_compression_error
      client = h2
      client.headers(1, "#{client.block(client.request_fields)}\x41".b) # a literal cut after its first byte
      assert_connection_error(client, :compression_error)
    end

    def test_4_3_priority_inside_a_header_block_is_a_protocol_error
      client = h2
      client.headers(1, end_headers: false)
      client.write(:priority, 0, 1, client.priority_payload(0))
      assert_connection_error(client, :protocol_error)
    end

    def test_4_3_headers_of_another_stream_inside_a_header_block_is_a_protocol_error
      client = h2
      client.headers(1, end_headers: false)
      client.headers(3)
      assert_connection_error(client, :protocol_error)
    end

    # ---- §5.1 stream states

    def test_5_1_data_on_an_idle_stream_is_a_protocol_error
      client = h2
      client.data(1, "early")
      assert_connection_error(client, :protocol_error)
    end

    def test_5_1_rst_stream_on_an_idle_stream_is_a_protocol_error
      client = h2
      client.rst_stream(1)
      assert_connection_error(client, :protocol_error)
    end

    def test_5_1_window_update_on_an_idle_stream_is_a_protocol_error
      client = h2
      client.window_update(1, 100)
      assert_connection_error(client, :protocol_error)
    end

    def test_5_1_continuation_on_an_idle_stream_is_a_protocol_error
      client = h2
      client.write(:continuation, H2CaseClient::END_HEADERS, 1, client.block(client.request_fields))
      assert_connection_error(client, :protocol_error)
    end

    def test_5_1_priority_on_an_idle_stream_is_taken
      client = h2
      client.write(:priority, 0, 3, client.priority_payload(0))
      client.headers(3)
      assert_answered(client, 3, "hello")
    end

    # A stream half-closed by the client whose response cannot end: its window is 0.
    def half_closed_stream
      client = h2(settings: { initial_window_size: 0 })
      client.headers(1, request("/big"))
      head = client.wait_for { |e| e.type == :headers && e.stream == 1 }
      assert_equal :headers, head.type, describe(head)
      client
    end

    def test_5_1_data_after_end_stream_is_stream_closed
      client = half_closed_stream
      client.data(1, "more")
      assert_stream_error(client, 1, :stream_closed)
    end

    def test_5_1_headers_after_end_stream_is_stream_closed
      client = half_closed_stream
      client.headers(1, [["x-late", "1"]])
      assert_stream_error(client, 1, :stream_closed)
    end

    def test_5_1_continuation_after_end_stream_is_a_protocol_error
      client = half_closed_stream
      client.write(:continuation, H2CaseClient::END_HEADERS, 1, client.block([["x-late", "1"]]))
      assert_connection_error(client, :protocol_error)
    end

    def test_5_1_window_update_on_a_half_closed_stream_is_taken
      client = h2
      client.headers(1, client.request_fields("/big"))
      client.window_update(1, 1000)
      assert_answered(client, 1, BIG)
    end

    def test_5_1_data_after_rst_stream_is_stream_closed
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.rst_stream(1)
      client.data(1, "after the reset")
      assert_stream_error(client, 1, :stream_closed)
    end

    def test_5_1_headers_after_rst_stream_is_stream_closed
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.rst_stream(1)
      client.headers(1, [["x-late", "1"]])
      assert_stream_error(client, 1, :stream_closed)
    end

    def test_5_1_continuation_after_rst_stream_is_a_protocol_error
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.rst_stream(1)
      client.write(:continuation, H2CaseClient::END_HEADERS, 1, client.block([["x-late", "1"]]))
      assert_connection_error(client, :protocol_error)
    end

    def test_5_1_data_on_a_closed_stream_is_stream_closed
      client = h2
      client.headers(1)
      assert_answered(client, 1)
      client.data(1, "too late")
      assert_stream_error(client, 1, :stream_closed)
    end

    def test_5_1_headers_on_a_closed_stream_is_stream_closed
      client = h2
      client.headers(1)
      assert_answered(client, 1)
      client.headers(1)
      assert_stream_error(client, 1, :stream_closed, :protocol_error)
    end

    def test_5_1_window_update_and_rst_stream_just_after_a_reset_are_ignored
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.rst_stream(1)
      client.window_update(1, 100)
      client.rst_stream(1)
      assert_alive(client)
    end

    def test_5_1_priority_on_a_closed_stream_is_taken
      client = h2
      client.headers(1)
      assert_answered(client, 1)
      client.write(:priority, 0, 1, client.priority_payload(0))
      assert_alive(client)
    end

    # ---- §5.1.1 stream identifiers

    def test_5_1_1_an_even_stream_identifier_is_a_protocol_error
      client = h2
      client.headers(2)
      assert_connection_error(client, :protocol_error)
    end

    def test_5_1_1_a_stream_identifier_below_one_used_is_a_protocol_error
      client = h2
      client.headers(5)
      assert_answered(client, 5)
      client.headers(3)
      assert_connection_error(client, :protocol_error)
    end

    def test_5_1_1_skipped_stream_identifiers_are_fine
      client = h2
      client.headers(1)
      client.headers(11)
      assert_answered(client, 1, "hello")
      assert_answered(client, 11, "hello")
    end

    # ---- §5.1.2 stream concurrency

    def test_5_1_2_more_streams_than_max_concurrent_streams_are_refused
      client = h2
      limit = client.server_settings[H2Frames::SETTINGS[:max_concurrent_streams]]
      refute_nil limit, "SETTINGS_MAX_CONCURRENT_STREAMS advertised"
      streams = (1..((limit + 1) * 2)).step(2).to_a
      streams.each { |id| client.headers(id, post_fields(client), end_stream: false) }
      assert_stream_error(client, streams.last, :protocol_error, :refused_stream)
    end

    # ---- §5.3.1 / §6.3 priority

    def test_5_3_1_headers_depending_on_itself_is_a_protocol_error
      client = h2
      client.headers(1, flags: H2CaseClient::PRIORITY, prefix: client.priority_payload(1))
      assert_stream_error(client, 1, :protocol_error)
    end

    def test_5_3_1_priority_depending_on_itself_is_a_protocol_error
      client = h2
      client.write(:priority, 0, 1, client.priority_payload(1))
      assert_stream_error(client, 1, :protocol_error)
    end

    # ---- §5.4.1 connection error handling

    def test_5_4_1_goaway_names_the_last_stream_processed_and_the_connection_closes
      client = h2
      client.headers(1)
      assert_answered(client, 1)
      client.write(:ping, 0, 1, "on a str")
      event = assert_connection_error(client, :protocol_error)
      assert_equal 1, event.goaway_last_stream
      assert_equal :closed, client.wait_for { false }.type, "the connection is closed after GOAWAY"
    end

    # ---- §5.5 extending HTTP/2

    def test_5_5_an_unknown_frame_inside_a_header_block_is_a_protocol_error
      client = h2
      client.headers(1, end_headers: false)
      client.write(0xfa, 0, 1, "between")
      assert_connection_error(client, :protocol_error)
    end

    # ---- §6.1 DATA

    def test_6_1_data_on_stream_zero_is_a_protocol_error
      client = h2
      client.data(0, "zero")
      assert_connection_error(client, :protocol_error)
    end

    def test_6_1_data_padded_past_its_length_is_a_protocol_error
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.write(:data, H2CaseClient::PADDED | H2CaseClient::END_STREAM, 1, "\x06abcde".b)
      assert_connection_error(client, :protocol_error)
    end

    def test_6_1_padded_data_is_taken_without_its_padding
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.write(:data, H2CaseClient::PADDED | H2CaseClient::END_STREAM, 1, "\x04abc\x00\x00\x00\x00".b)
      assert_answered(client, 1, "3")
    end

    # ---- §6.2 HEADERS

    def test_6_2_headers_on_stream_zero_is_a_protocol_error
      client = h2
      client.headers(0)
      assert_connection_error(client, :protocol_error)
    end

    def test_6_2_headers_padded_past_its_length_is_a_protocol_error
      client = h2
      block = client.block(client.request_fields)
      client.headers(1, block, flags: H2CaseClient::PADDED, prefix: [block.bytesize + 1].pack("C"))
      assert_connection_error(client, :protocol_error)
    end

    def test_6_2_headers_without_end_headers_then_data_is_a_protocol_error
      client = h2
      client.headers(1, post_fields(client), end_headers: false, end_stream: false)
      client.data(1, "abc")
      assert_connection_error(client, :protocol_error)
    end

    def test_6_2_padded_headers_with_priority_are_taken
      client = h2
      block = client.block(client.request_fields) + ("\x00" * 7)
      client.headers(1, block, flags: H2CaseClient::PADDED | H2CaseClient::PRIORITY,
                               prefix: [7].pack("C") + client.priority_payload(0, weight: 200))
      assert_answered(client, 1, "hello")
    end

    # ---- §6.3 PRIORITY

    def test_6_3_priority_on_stream_zero_is_a_protocol_error
      client = h2
      client.write(:priority, 0, 0, client.priority_payload(1))
      assert_connection_error(client, :protocol_error)
    end

    def test_6_3_priority_of_another_length_than_5_is_a_frame_size_error
      client = h2
      client.write(:priority, 0, 1, "\x00\x00\x00\x00".b)
      assert_stream_error(client, 1, :frame_size_error)
    end

    # ---- §6.4 RST_STREAM

    def test_6_4_rst_stream_on_stream_zero_is_a_protocol_error
      client = h2
      client.rst_stream(0)
      assert_connection_error(client, :protocol_error)
    end

    def test_6_4_rst_stream_of_another_length_than_4_is_a_frame_size_error
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.write(:rst_stream, 0, 1, "\x00\x00\x08".b)
      assert_connection_error(client, :frame_size_error)
    end

    def test_6_4_a_reset_stream_ends_alone_and_the_connection_goes_on
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.rst_stream(1)
      client.headers(3)
      assert_answered(client, 3, "hello")
    end

    # ---- §6.5 SETTINGS

    def test_6_5_settings_ack_with_a_payload_is_a_frame_size_error
      client = h2
      client.write(:settings, H2CaseClient::ACK, 0, "\x00\x00")
      assert_connection_error(client, :frame_size_error)
    end

    def test_6_5_settings_on_a_stream_is_a_protocol_error
      client = h2
      client.settings({ initial_window_size: 1000 }, stream: 1)
      assert_connection_error(client, :protocol_error)
    end

    def test_6_5_settings_of_a_length_not_a_multiple_of_6_is_a_frame_size_error
      client = h2
      client.write(:settings, 0, 0, "\x00\x03\x00")
      assert_connection_error(client, :frame_size_error)
    end

    def test_6_5_settings_are_acknowledged
      client = h2
      client.settings({ max_concurrent_streams: 10, header_table_size: 1024 })
      event = client.wait_for { |e| e.type == :settings }
      assert_equal [:settings, H2CaseClient::ACK, ""], [event.type, event.flags, event.payload], describe(event)
    end

    # ---- §6.5.2 defined settings

    def test_6_5_2_enable_push_above_1_is_a_protocol_error
      client = h2
      client.settings({ enable_push: 2 })
      assert_connection_error(client, :protocol_error)
    end

    def test_6_5_2_initial_window_size_above_2_31_minus_1_is_a_flow_control_error
      client = h2
      client.settings({ initial_window_size: 2**31 })
      assert_connection_error(client, :flow_control_error)
    end

    def test_6_5_2_max_frame_size_below_16384_is_a_protocol_error
      client = h2
      client.settings({ max_frame_size: 16_383 })
      assert_connection_error(client, :protocol_error)
    end

    def test_6_5_2_max_frame_size_above_2_24_minus_1_is_a_protocol_error
      client = h2
      client.settings({ max_frame_size: 2**24 })
      assert_connection_error(client, :protocol_error)
    end

    def test_6_5_2_the_largest_allowed_values_are_taken
      client = h2
      client.settings({ initial_window_size: MAX_WINDOW, max_frame_size: (2**24) - 1, enable_push: 0 })
      event = client.wait_for { |e| e.type == :settings }
      assert_equal [:settings, H2CaseClient::ACK], [event.type, event.flags], describe(event)
      client.headers(1)
      assert_answered(client, 1, "hello")
    end

    def test_6_5_2_an_unknown_setting_is_ignored
      client = h2
      client.settings([[0xfa, 7]])
      event = client.wait_for { |e| e.type == :settings }
      assert_equal [:settings, H2CaseClient::ACK], [event.type, event.flags], describe(event)
      assert_alive(client)
    end

    # ---- §6.5.3 settings synchronization

    def test_6_5_3_settings_apply_in_their_order
      client = h2(settings: [[:initial_window_size, 100], [:initial_window_size, 1]])
      client.headers(1, client.request_fields("/big"))
      event = client.wait_for { |e| e.type == :data && e.stream == 1 }
      assert_equal [:data, 1], [event.type, event.payload&.bytesize], "one byte, the last value's window: got #{describe(event)}"
    end

    # ---- §6.7 PING

    def test_6_7_ping_is_answered_with_its_payload
      client = h2
      client.write(:ping, 0, 0, "\x00\x01\x02\x03\xfc\xfd\xfe\xff".b)
      event = client.wait_for { |e| e.type == :ping }
      assert_equal [H2CaseClient::ACK, "\x00\x01\x02\x03\xfc\xfd\xfe\xff".b], [event.flags, event.payload], describe(event)
    end

    def test_6_7_a_ping_ack_is_not_answered
      client = h2
      client.write(:ping, H2CaseClient::ACK, 0, "unasked!")
      client.write(:ping, 0, 0, "answerme")
      event = client.wait_for { |e| e.type == :ping }
      assert_equal "answerme", event.payload, describe(event)
    end

    def test_6_7_ping_on_a_stream_is_a_protocol_error
      client = h2
      client.write(:ping, 0, 1, "streamed")
      assert_connection_error(client, :protocol_error)
    end

    def test_6_7_ping_of_another_length_than_8_is_a_frame_size_error
      client = h2
      client.write(:ping, 0, 0, "short")
      assert_connection_error(client, :frame_size_error)
    end

    # ---- §6.8 GOAWAY

    def test_6_8_goaway_on_a_stream_is_a_protocol_error
      client = h2
      client.write(:goaway, 0, 1, [0, 0].pack("NN"))
      assert_connection_error(client, :protocol_error)
    end

    # ---- §6.9 WINDOW_UPDATE

    def test_6_9_a_zero_increment_on_the_connection_is_a_protocol_error
      client = h2
      client.window_update(0, 0)
      assert_connection_error(client, :protocol_error)
    end

    def test_6_9_a_zero_increment_on_a_stream_is_a_protocol_error
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.window_update(1, 0)
      assert_stream_error(client, 1, :protocol_error)
    end

    def test_6_9_window_update_of_another_length_than_4_is_a_frame_size_error
      client = h2
      client.write(:window_update, 0, 0, "\x00\x00\x01".b)
      assert_connection_error(client, :frame_size_error)
    end

    # ---- §6.9.1 the flow-control window

    def test_6_9_1_a_connection_window_above_2_31_minus_1_is_a_flow_control_error
      client = h2
      client.window_update(0, MAX_WINDOW)
      assert_connection_error(client, :flow_control_error)
    end

    def test_6_9_1_a_stream_window_above_2_31_minus_1_is_a_flow_control_error
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.window_update(1, MAX_WINDOW)
      assert_stream_error(client, 1, :flow_control_error)
    end

    # A window of 0: the head comes, no DATA with bytes until a WINDOW_UPDATE opens it.
    def test_6_9_1_a_zero_window_holds_data_until_a_window_update
      client = h2(settings: { initial_window_size: 0 })
      client.headers(1, client.request_fields("/big"))
      head = client.wait_for { |e| e.type == :headers && e.stream == 1 }
      assert_equal ":status", head.fields&.first&.first, describe(head)
      held = client.wait_for(timeout: 0.5) { |e| e.type == :data && !e.payload.empty? }
      assert_equal :timeout, held.type, "no DATA in a zero window: got #{describe(held)}"
      client.window_update(1, 5)
      event = client.wait_for { |e| e.type == :data && !e.payload.empty? }
      assert_equal "01234", event.payload, describe(event)
    end

    # ---- §6.9.2 initial window size

    def test_6_9_2_a_new_initial_window_size_changes_open_streams_windows
      client = h2(settings: { initial_window_size: 1 })
      client.headers(1, client.request_fields("/big"))
      first = client.wait_for { |e| e.type == :data && !e.payload.empty? }
      assert_equal "0", first.payload, describe(first)
      client.settings({ initial_window_size: 3 })
      more = client.wait_for { |e| e.type == :data && !e.payload.empty? }
      assert_equal "12", more.payload, "the window grew by 2: got #{describe(more)}"
      rest = client.wait_for(timeout: 0.5) { |e| e.type == :data && !e.payload.empty? }
      assert_equal :timeout, rest.type, "nothing past the window: got #{describe(rest)}"
    end

    def test_6_9_2_a_settings_change_that_overflows_a_stream_window_is_a_flow_control_error
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.window_update(1, MAX_WINDOW - 65_535)
      client.settings({ initial_window_size: 65_536 })
      assert_connection_error(client, :flow_control_error)
    end

    # ---- §6.10 CONTINUATION

    def test_6_10_a_header_block_in_continuation_frames_is_taken
      client = h2
      block = client.block(client.request_fields("/field", extra: [["x-case", "continued"]]))
      client.headers(1, block.byteslice(0, 5), end_headers: false)
      client.write(:continuation, 0, 1, block.byteslice(5, 10))
      client.write(:continuation, H2CaseClient::END_HEADERS, 1, block.byteslice(15..))
      assert_answered(client, 1, "continued")
    end

    def test_6_10_continuation_after_end_headers_is_a_protocol_error
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.write(:continuation, H2CaseClient::END_HEADERS, 1, client.block([["x-more", "1"]]))
      assert_connection_error(client, :protocol_error)
    end

    def test_6_10_continuation_on_stream_zero_is_a_protocol_error
      client = h2
      client.headers(1, end_headers: false)
      client.write(:continuation, H2CaseClient::END_HEADERS, 0, client.block([["x-more", "1"]]))
      assert_connection_error(client, :protocol_error)
    end

    def test_6_10_continuation_of_another_stream_is_a_protocol_error
      client = h2
      client.headers(1, end_headers: false)
      client.write(:continuation, H2CaseClient::END_HEADERS, 3, client.block([["x-more", "1"]]))
      assert_connection_error(client, :protocol_error)
    end

    # ---- §8 HTTP semantics: malformed requests (§8.1.1) are stream errors PROTOCOL_ERROR

    def assert_malformed(fields)
      client = h2
      client.headers(1, fields)
      assert_stream_error(client, 1, :protocol_error)
      client
    end

    def test_8_2_an_uppercase_field_name_is_malformed
      assert_malformed(request("/", extra: [["X-Upper", "1"]]))
    end

    def test_8_2_1_a_field_value_with_a_line_feed_is_malformed
      assert_malformed(request("/", extra: [["x-split", "a\nb"]]))
    end

    def test_8_2_2_a_connection_specific_field_is_malformed
      assert_malformed(request("/", extra: [["connection", "keep-alive"]]))
    end

    def test_8_2_2_te_other_than_trailers_is_malformed
      assert_malformed(request("/", extra: [["te", "gzip"]]))
    end

    def test_8_2_2_te_trailers_is_taken
      client = h2
      client.headers(1, client.request_fields("/", extra: [["te", "trailers"]]))
      assert_answered(client, 1, "hello")
    end

    def test_8_3_an_unknown_pseudo_header_field_is_malformed
      assert_malformed(request.insert(1, [":color", "blue"]))
    end

    def test_8_3_a_response_pseudo_header_field_in_a_request_is_malformed
      assert_malformed(request.insert(1, [":status", "200"]))
    end

    def test_8_3_a_pseudo_header_field_after_a_regular_one_is_malformed
      fields = request
      assert_malformed([*fields.first(3), ["x-before", "1"], fields.last])
    end

    def test_8_3_1_a_duplicated_pseudo_header_field_is_malformed
      assert_malformed(request.insert(2, [":path", "/again"]))
    end

    def test_8_3_1_an_empty_path_is_malformed
      assert_malformed(request(""))
    end

    def test_8_3_1_a_request_without_method_is_malformed
      assert_malformed(request.reject { |name, _| name == ":method" })
    end

    def test_8_3_1_a_request_without_scheme_is_malformed
      assert_malformed(request.reject { |name, _| name == ":scheme" })
    end

    def test_8_3_1_a_request_without_path_is_malformed
      assert_malformed(request.reject { |name, _| name == ":path" })
    end

    def test_8_1_1_a_body_shorter_than_content_length_is_malformed
      client = h2
      client.headers(1, post_fields(client, extra: [["content-length", "10"]]), end_stream: false)
      client.data(1, "abc")
      assert_stream_error(client, 1, :protocol_error)
    end

    def test_8_1_1_a_body_longer_than_content_length_is_malformed
      client = h2
      client.headers(1, post_fields(client, extra: [["content-length", "4"]]), end_stream: false)
      client.data(1, "abc", end_stream: false)
      client.data(1, "def")
      assert_stream_error(client, 1, :protocol_error)
    end

    def test_8_1_trailers_without_end_stream_are_a_protocol_error
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.data(1, "abc", end_stream: false)
      client.headers(1, [["x-trailer", "1"]], end_stream: false)
      assert_stream_error(client, 1, :protocol_error)
    end

    def test_8_1_trailers_with_end_stream_are_taken
      client = h2
      client.headers(1, post_fields(client), end_stream: false)
      client.data(1, "abc", end_stream: false)
      client.headers(1, [["x-trailer", "1"]])
      assert_answered(client, 1, "3")
    end

    def test_8_4_push_promise_from_a_client_is_a_protocol_error
      client = h2
      client.headers(1, end_stream: false)
      client.write(:push_promise, H2CaseClient::END_HEADERS, 1, [2].pack("N") + client.block(client.request_fields))
      assert_connection_error(client, :protocol_error)
    end

    # ---- RFC 7541 HPACK

    # pieces, then a request for /field whose x-case is "after".
    def hpack_block(*pieces)
      pieces.join.b + HpackEncoder.new.encode(request("/field", extra: [["x-case", "after"]]))
    end

    def assert_compression_error(block)
      client = h2
      client.headers(1, block)
      assert_connection_error(client, :compression_error)
    end

    def test_hpack_6_1_index_zero_is_a_compression_error
      assert_compression_error("\x80".b)
    end

    def test_hpack_2_3_3_an_index_past_both_tables_is_a_compression_error
      assert_compression_error(HpackEncoder.integer(70, 7, 0x80))
    end

    def test_hpack_6_3_a_table_size_update_above_the_setting_is_a_compression_error
      client = h2
      limit = client.server_settings.fetch(H2Frames::SETTINGS[:header_table_size], 4096)
      client.headers(1, hpack_block(HpackEncoder.integer(limit + 1, 5, 0x20)))
      assert_connection_error(client, :compression_error)
    end

    def test_hpack_4_2_a_table_size_update_after_a_field_is_a_compression_error
      client = h2
      fields = client.request_fields
      client.headers(1, client.block(fields.first(1)) + HpackEncoder.integer(0, 5, 0x20) + client.block(fields.drop(1)))
      assert_connection_error(client, :compression_error)
    end

    def test_hpack_6_3_a_table_size_update_at_the_start_is_taken
      client = h2
      client.headers(1, hpack_block(HpackEncoder.integer(0, 5, 0x20), HpackEncoder.integer(256, 5, 0x20)))
      assert_answered(client, 1, "after")
    end

    def test_hpack_5_2_eos_in_a_huffman_string_is_a_compression_error
      assert_compression_error(hpack_block("\x00\x03x-h\x84\xff\xff\xff\xff"))
    end

    def test_hpack_5_2_huffman_padding_longer_than_7_bits_is_a_compression_error
      assert_compression_error(hpack_block("\x00\x03x-h\x82\x1f\xff")) # "a", then 11 ones
    end

    def test_hpack_5_2_huffman_padding_of_zeros_is_a_compression_error
      assert_compression_error(hpack_block("\x00\x03x-h\x81\x18")) # "a", then 000
    end

    def test_hpack_5_2_a_huffman_coded_request_is_taken
      client = h2
      client.headers(1, client.block(client.request_fields("/field", extra: [["x-case", "huffman coded"]]), huffman: true))
      assert_answered(client, 1, "huffman coded")
    end

    # A field the first request adds to the dynamic table (§6.2.1), which the next two name by
    # its index; the second request's own literal pushes it one place further.
    def test_hpack_2_3_2_the_dynamic_table_carries_fields_across_requests
      client = h2
      added = HpackEncoder.integer(0, 6, 0x40) + client.block([["x-case", "indexed"]]).byteslice(1..)
      client.headers(1, client.block(client.request_fields("/field")) + added)
      assert_answered(client, 1, "indexed")
      client.headers(3, client.block(client.request_fields("/field")) + HpackEncoder.integer(62, 7, 0x80))
      assert_answered(client, 3, "indexed")
      other = HpackEncoder.integer(0, 6, 0x40) + client.block([["x-other", "1"]]).byteslice(1..)
      client.headers(5, client.block(client.request_fields("/field")) + other + HpackEncoder.integer(63, 7, 0x80))
      assert_answered(client, 5, "indexed")
    end

    # The server's own blocks, read through our decoder: Huffman and its dynamic table as the
    # server chose to use them, over responses in turn on one connection.
    def test_hpack_responses_decode_in_turn_on_one_connection
      client = h2
      (1..9).step(2) do |id|
        client.headers(id, client.request_fields("/field", extra: [["x-case", "turn #{id}"]]))
        response = assert_answered(client, id, "turn #{id}")
        assert_equal "text/plain", response.fields.assoc("content-type")&.last
      end
    end
  end
end

HTTP2Cases::RUNTIMES.each do |runtime|
  { "H2c" => false, "TLS" => true }.each do |transport, tls|
    name = "TestHTTP2Cases#{runtime.split("_").map(&:capitalize).join}#{transport}"
    Object.const_set(name, Class.new(Minitest::Test) do
      const_set(:RUNTIME, runtime)
      const_set(:TLS, tls)
      include HTTP2Cases::Cases
    end)
  end
end
