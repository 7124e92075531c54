# frozen_string_literal: true

# up_ruby's WebSockets with an independent client: the npm ws package (bench/node_modules,
# installed by bin/setup --test) driven by test/support/ws_interop.js, every scenario with and
# without ws's permessage-deflate offer. Text, binary, max-size and fragmented messages come
# back whole; pings are answered both ways; Close codes go both ways (the client's echoed, the
# server's own: 1000 from the app, 1001 on a stop, 1007 for text that is not UTF-8, 1009 past
# max_msg); the app's subprotocol reaches ws; with --ws-deflate all of it again compressed
# (RFC 7692). The script reports what ws saw, this file judges.
require_relative "helper"
require "digest"
require "json"
require "open3"

class TestWebSocketInterop < Minitest::Test
  include UpTestHelpers

  SCRIPT = File.expand_path("support/ws_interop.js", __dir__)
  MAX_MSG = 1024 * 1024 # ws_interop.js sends text of exactly this much, then one byte more
  NORMAL = { "code" => 1000, "reason" => "", "error" => nil }.freeze # what ws reports of a Close 1000

  # Echoes, except: on /close it answers with "last words" and closes; on /ping it pings the
  # client after a second of silence.
  class Handler
    def on_open(client)
      client.timeout = 1 if client.env["PATH_INFO"] == "/ping"
    end

    def on_message(client, data)
      if client.env["PATH_INFO"] == "/close"
        client.write("last words")
        client.close
      else
        client.write(data)
      end
    end
  end

  def app
    handler = Handler.new
    lambda do |env|
      next [426, {}, ["WebSocket only\n"]] unless env["rack.upgrade?"] == :websocket

      env["rack.upgrade"] = handler
      offered = env["HTTP_SEC_WEBSOCKET_PROTOCOL"].to_s.split(/\s*,\s*/)
      [101, offered.include?("chat") ? { "sec-websocket-protocol" => "chat" } : {}, []]
    end
  end

  def teardown
    @node&.each do |stdin, stdout, wait|
      begin
        Process.kill(:KILL, wait.pid)
      rescue Errno::ESRCH
        nil # it had ended
      end
      wait.join
      [stdin, stdout].each(&:close)
    end
    super
  end

  # Starts the script; returns its stdout.
  def node(mode)
    stdin, stdout, wait = Open3.popen2e("node", SCRIPT, @port.to_s, mode)
    (@node ||= []) << [stdin, stdout, wait]
    stdout
  end

  # The script's next JSON line, within seconds.
  def next_line(out, seconds: 15)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    line = nil
    loop do
      left = deadline - Process.clock_gettime(Process::CLOCK_MONOTONIC)
      flunk "ws_interop.js said nothing within #{seconds}s" if left <= 0 || !out.wait_readable(left)
      line = out.gets
      flunk "ws_interop.js ended early" if line.nil?
      break if line.start_with?("{")

      warn "ws_interop.js: #{line}"
    end
    JSON.parse(line)
  end

  def test_the_ws_client_echoes_pings_closes_and_negotiates_with_up
    start_server(app, threads: 2, max_msg: MAX_MSG)
    each_scenario do |scenario, name, r|
      assert_scenario(scenario, name, r)
      assert_equal "", r["extensions"], "#{name}: no permessage-deflate unless --ws-deflate" if r.key?("extensions")
    end
  end

  # The same with --ws-deflate: an offer of permessage-deflate (RFC 7692) is taken, and every
  # message, the 1 MiB ones included, goes compressed both ways; text that is not UTF-8 and a
  # message that inflates past max_msg fail as they do uncompressed.
  def test_the_ws_client_with_permessage_deflate
    start_server(app, threads: 2, max_msg: MAX_MSG, ws_deflate: true)
    each_scenario do |scenario, name, r|
      assert_scenario(scenario, name, r)
      expected = name.end_with?("+deflate") ? "permessage-deflate" : ""
      assert_equal expected, r["extensions"], "#{name}: the extension agreed" if r.key?("extensions")
    end
  end

  def test_a_server_stop_reaches_the_ws_client_as_1001
    server = start_server(app, threads: 2)
    out = node("stop")
    assert_equal({ "open" => true }, next_line(out))
    stopper = Thread.new { server.stop }
    line = next_line(out)
    assert_equal 1001, line.dig("close", "code"), line.inspect
    assert stopper.join(10), "the stop finished"
  end

  private

  # Runs every scenario of ws_interop.js against the server on @port; yields each result.
  def each_scenario
    out = node("all")
    results = {}
    until (line = next_line(out)).key?("done")
      results[line.delete("scenario")] = line
    end
    assert_equal 22, results.size, results.keys.inspect
    results.each do |name, r|
      refute r.key?("error"), "#{name}: #{r["error"]}"
      yield name.delete_suffix("+deflate"), name, r
    end
  end

  def assert_scenario(scenario, name, r)
    case scenario
    when "text_echo"
      assert_equal [false, "héllo wörld ✓ κόσμε", NORMAL], [r["binary"], r["text"], r["close"]], name
    when "binary_echo"
      assert_equal [true, 4096, r["sent_sha"], NORMAL], [r["binary"], r["bytes"], r["sha"], r["close"]], name
    when "large_echo"
      assert_equal [true, MAX_MSG - 16_384, r["sent_sha"]], r["binary"].values_at("binary", "bytes", "sha"), "#{name}: binary"
      assert_equal [false, MAX_MSG, r["sent_text_sha"]], r["text"].values_at("binary", "bytes", "sha"), "#{name}: text"
      assert_equal NORMAL, r["close"], name
    when "fragmented_echo"
      assert_equal [false, "fragments: κόσμε, joined", NORMAL], [r["binary"], r["text"], r["close"]], name
    when "client_ping"
      assert_equal ["are you there?", NORMAL], [r["pong"], r["close"]], name
    when "server_ping"
      assert_equal ["", "still here", NORMAL], [r["ping"], r["answer"], r["close"]], name
    when "client_close_codes"
      expected = %w[1000 1001 1003 1008 3000 4000 4999].to_h { |c| [c, Integer(c)] }.merge("none" => 1005)
      assert_equal expected, r["codes"], "#{name}: each code echoed, an empty Close answered by an empty one"
    when "server_close"
      assert_equal ["last words", NORMAL], [r["message"], r["close"]], name
    when "invalid_utf8"
      assert_equal 1007, r.dig("close", "code"), "#{name}: #{r.inspect}"
    when "too_big"
      assert_equal 1009, r.dig("close", "code"), "#{name}: #{r.inspect}"
    when "subprotocol"
      assert_equal ["chat", "with a subprotocol", ""], r.values_at("chosen", "answer", "without"), name
    else
      flunk "unknown scenario #{name}"
    end
  end
end
