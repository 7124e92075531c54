# frozen_string_literal: true

# The WebSocket opening handshake on up_ruby, over real sockets, one line per request: what
# RFC 6455 §4.2.1 makes an upgrade (GET, HTTP/1.1, "websocket" among the Upgrade tokens,
# "upgrade" among the Connection tokens, both case-insensitive lists per RFC 9110 §7.6.1 and
# §7.8), and how UP! answers the rest: a bad Sec-WebSocket-Version gets 400 with
# "Sec-WebSocket-Version: 13" (§4.2.2, §4.4); a missing, repeated or malformed key
# (base64 of 16 bytes, §4.1 item 7) or another method gets 400, and the connection closes
# after it; an Upgrade without Connection: upgrade, or in HTTP/1.0 (RFC 9110 §7.8), is a plain
# request, where the app sees rack.upgrade? nil. A 101 carries the key's accept value and
# opens a WebSocket that answers a ping. The frames after it are test_websocket_protocol*.rb's.
require_relative "helper"
require_relative "support/ws_frame_builder"

class TestWebSocketProtocolHandshake < Minitest::Test
  include UpTestHelpers

  KEY = "dGhlIHNhbXBsZSBub25jZQ==" # base64 of 16 bytes, and its accept value (RFC 6455 §1.3)
  ACCEPT = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
  GOOD = { "Upgrade" => "websocket", "Connection" => "Upgrade", "Sec-WebSocket-Version" => "13",
           "Sec-WebSocket-Key" => KEY }.freeze

  # [what, request line, header fields (nil drops one of GOOD; an Array repeats the field),
  #  status, what the app saw in rack.upgrade? (nil: the app was not called)]
  CASES = [
    ["a valid upgrade", "GET / HTTP/1.1", {}, 101, :websocket],
    ["Connection with other tokens", "GET / HTTP/1.1", { "Connection" => "keep-alive, Upgrade" }, 101, :websocket],
    ["tokens in any case", "GET / HTTP/1.1", { "Upgrade" => "WebSocket", "Connection" => "UPGRADE" }, 101, :websocket],
    ["websocket among other Upgrade tokens", "GET / HTTP/1.1", { "Upgrade" => "h2c, websocket" }, 101, :websocket],
    ["Connection in two fields", "GET / HTTP/1.1", { "Connection" => ["keep-alive", "Upgrade"] }, 101, :websocket],
    ["no Connection: upgrade: a plain request", "GET / HTTP/1.1", { "Connection" => nil }, 200, nil],
    ["Connection: keep-alive only: a plain request", "GET / HTTP/1.1", { "Connection" => "keep-alive" }, 200, nil],
    ["an Upgrade to something else: a plain request", "GET / HTTP/1.1", { "Upgrade" => "h2c" }, 200, nil],
    ["HTTP/1.0 ignores Upgrade: a plain request", "GET / HTTP/1.0", {}, 200, nil],
    ["POST", "POST / HTTP/1.1", { "Content-Length" => "0" }, 400, nil],
    ["no Sec-WebSocket-Version", "GET / HTTP/1.1", { "Sec-WebSocket-Version" => nil }, 400, nil],
    ["version 8", "GET / HTTP/1.1", { "Sec-WebSocket-Version" => "8" }, 400, nil],
    ["version 13 twice", "GET / HTTP/1.1", { "Sec-WebSocket-Version" => %w[13 13] }, 400, nil],
    ["version 14", "GET / HTTP/1.1", { "Sec-WebSocket-Version" => "14" }, 400, nil],
    ["no Sec-WebSocket-Key", "GET / HTTP/1.1", { "Sec-WebSocket-Key" => nil }, 400, nil],
    ["a key of 15 bytes", "GET / HTTP/1.1", { "Sec-WebSocket-Key" => ["a" * 15].pack("m0") }, 400, nil],
    ["a key of 17 bytes", "GET / HTTP/1.1", { "Sec-WebSocket-Key" => ["a" * 17].pack("m0") }, 400, nil],
    ["a key that is not base64", "GET / HTTP/1.1", { "Sec-WebSocket-Key" => "!#{KEY[1..]}" }, 400, nil],
    ["two keys", "GET / HTTP/1.1", { "Sec-WebSocket-Key" => [KEY, KEY] }, 400, nil]
  ].freeze

  def test_every_request_gets_its_answer
    seen = Queue.new
    handler = Object.new # no callbacks: pings are the engine's
    start_server(lambda do |env|
      seen << env["rack.upgrade?"]
      next [200, { "content-length" => "5" }, ["plain"]] unless env["rack.upgrade?"] == :websocket

      env["rack.upgrade"] = handler
      [101, {}, []]
    end)
    failures = CASES.filter_map do |what, request_line, fields, status, upgrade|
      got = exchange(request_line, fields, status)
      saw = seen.empty? ? :not_called : seen.pop
      problems = []
      problems << "status #{got[:status].inspect}, expected #{status}" if got[:status] != status
      problems << "the app saw rack.upgrade? #{saw.inspect}, expected #{upgrade.inspect}" if status != 400 && saw != upgrade
      problems << "the app was called" if status == 400 && saw != :not_called
      problems << "then: #{got[:after]}" if got[:after]
      version = got[:response]&.[]("sec-websocket-version")
      problems << "a 400 for the version lists 13, got #{version.inspect}" if what.include?("ersion") && version != "13"
      "#{what}: #{problems.join("; ")}" unless problems.empty?
    end
    assert_empty failures, failures.join("\n")
  end

  private

  # Sends one request; returns its status and response, and in :after what went wrong next: a
  # 101 must carry the key's accept value and answer a ping on the WebSocket it opened; a 400
  # must be followed by the end of the connection.
  def exchange(request_line, fields, expected_status)
    lines = GOOD.merge(fields).compact.flat_map { |k, v| Array(v).map { |one| "#{k}: #{one}\r\n" } }.join
    sock = connect
    sock.write("#{request_line}\r\nHost: localhost\r\n#{lines}\r\n")
    response = read_response(sock)
    after = case [response&.status, expected_status]
            when [101, 101] then websocket_problem(sock, response)
            when [400, 400] then "the connection stayed open" unless ended?(sock)
            end
    { status: response&.status, response: response, after: after }
  end

  def websocket_problem(sock, response)
    return "no or a wrong sec-websocket-accept" unless response["sec-websocket-accept"] == ACCEPT

    sock.write(WSFrameBuilder.frame(:ping, "hi"))
    return "no pong on the new WebSocket" unless sock.wait_readable(2)

    pong = sock.read(4)
    "#{pong.inspect} for a ping on the new WebSocket" unless pong == "\x8a\x02hi".b
  end

  # Whether the server ends the connection within two seconds.
  def ended?(sock)
    return false unless sock.wait_readable(2)

    sock.read_nonblock(1, exception: false).nil?
  rescue Errno::ECONNRESET
    true
  end
end
