# frozen_string_literal: true

# examples/rails served by UP! the three ways users start a Rails app, `rails s -u up`,
# `rackup -s up` and `up_ruby`, in production (a SECRET_KEY_BASE from the environment, a
# database made by `rails db:prepare` in a temp dir): the scaffold's index page links its
# fingerprinted stylesheet and script (public/assets, from `rails assets:precompile`), which
# UP!'s engine answers without configuration and without calling Rails (the engine's
# immutable cache-control and etag, ranges and 304s), and a post created through the form
# (CSRF token and session cookie from the form page) is shown afterwards; and the index page's
# Action Cable channel receives that new post over a WebSocket on UP!'s rack.hijack, as Rails'
# own client in the page would (WSClient speaks the Action Cable protocol to /cable). The app's
# own bundle (examples/rails/Gemfile) and its precompiled assets come from bin/setup --test.
require_relative "helper"
require_relative "support/rails_example"
require_relative "support/ws_client"
require "json"
require "uri"

class TestExampleRails < Minitest::Test
  include UpTestHelpers
  include RailsExample

  ASSET = %r{/assets/application-\h{8}\.(?:css|js)}
  IMMUTABLE = "public, max-age=31536000, immutable"

  def setup
    setup_rails
  end

  def teardown
    super
    @server&.stop
    teardown_rails
  end

  def test_rails_s_dash_u_up_serves_the_scaffold
    @server = rails_s_up
    check_the_scaffold
    @server.signal(:INT)
    assert @server.wait.success?, @server.output
  end

  # Rails names the server it boots after the handler (ours says UP!), and a port in use ends
  # the start with UP!'s one line, status 1, between Rails' own lines ("=> ...", "Exiting").
  def test_rails_s_dash_u_up_boots_up_and_says_a_taken_port_in_one_line
    taken = TCPServer.new("127.0.0.1", 0)
    port = taken.addr[1]
    @server = in_rails_dir("rails", "s", "-u", "up", "-p", port.to_s, "-b", "127.0.0.1", "-P",
                           File.join(@dir, "server.pid"), wait: false)
    assert_equal 1, @server.wait(timeout: 45).exitstatus, @server.output
    assert_includes @server.output, "=> Booting UP!\n"
    assert_equal ["up: cannot listen on tcp://127.0.0.1:#{port}: Address already in use - bind(2) for 127.0.0.1:#{port}\n"],
                 @server.output.lines.grep_v(/\A(=> |Exiting\n)/)
  ensure
    taken&.close
  end

  def test_rackup_dash_s_up_serves_the_scaffold
    @server = in_rails_dir("rackup", "-s", "up", "-p", "0", "-o", "127.0.0.1")
    check_the_scaffold
    @server.signal(:INT)
    assert @server.wait.success?, @server.output
  end

  def test_up_ruby_serves_the_scaffold
    @server = in_rails_dir("up_ruby", "-p", "0", "-b", "127.0.0.1", "-w", "1")
    check_the_scaffold
    @server.signal(:INT)
    assert @server.wait.success?, @server.output
  end

  def test_action_cable_channel_receives_a_new_post
    @server = rails_s_up
    @port = @server.port
    index, = request("GET", "/posts")
    assert_includes index.body, %(import { createConsumer } from "/actioncable.esm.js")
    client, = request("GET", "/actioncable.esm.js")
    assert_equal [200, "text/javascript"], [client.status, client["content-type"]]
    assert_includes client.body, "function createConsumer"

    cable = open_cable
    identifier = { channel: "PostsChannel" }.to_json
    cable.text({ command: "subscribe", identifier: identifier }.to_json)
    assert_equal({ "identifier" => identifier, "type" => "confirm_subscription" }, cable_message(cable))

    post_through_the_form("post[title]" => "Live over Action Cable", "post[body]" => "Pushed to the page.")
    broadcast = cable_message(cable)
    assert_equal identifier, broadcast["identifier"]
    assert_equal ["Live over Action Cable", "Pushed to the page."], broadcast["message"].values_at("title", "body")

    cable.close
    @server.signal(:INT)
    assert @server.wait.success?, @server.output
  ensure
    cable&.close_socket
  end

  private

  # A WebSocket to /cable as Rails' client opens it: same origin, its subprotocols; Action Cable
  # (websocket-driver over rack.hijack) answers the handshake and welcomes the client.
  def open_cable
    origin = "http://127.0.0.1:#{@port}"
    cable = WSClient.open(@port, path: "/cable",
                                 headers: { "Host" => "127.0.0.1:#{@port}", "Origin" => origin,
                                            "Sec-WebSocket-Protocol" => "actioncable-v1-json, actioncable-unsupported" })
    assert_match(/^sec-websocket-protocol: actioncable-v1-json\r$/i, cable.response_head)
    assert_equal({ "type" => "welcome" }, cable_message(cable))
    cable
  end

  # The next Action Cable message but its pings (one every 3 s).
  def cable_message(cable)
    loop do
      frame = cable.read_message or flunk "Action Cable closed the WebSocket"
      message = JSON.parse(frame.payload)
      return message unless message["type"] == "ping"
    end
  end

  # Creates a post through the scaffold's form (its CSRF token and session cookie); returns
  # the response to the POST.
  def post_through_the_form(fields)
    form, = request("GET", "/posts/new")
    token = form.body[/name="authenticity_token" value="([^"]+)"/, 1] or flunk "no CSRF token:\n#{form.body}"
    created, = request("POST", "/posts", { "Cookie" => session_cookie(form) },
                       URI.encode_www_form(fields.merge("authenticity_token" => token)))
    assert_equal 302, created.status, created.body
    created
  end

  def check_the_scaffold
    @port = @server.port

    index, hints = request("GET", "/posts")
    assert_equal 200, index.status, index.body
    assert_includes index.body, "<h1>Posts</h1>"
    assert_includes index.body, "Post 1" # from db/seeds.rb
    stylesheet = index.body[%r{<link rel="stylesheet" href="(#{ASSET})" />}, 1] or flunk "no stylesheet link"
    script = index.body[%r{<script src="(#{ASSET})" defer="defer"></script>}, 1] or flunk "no script tag"
    # Rails sends both ahead as a 103 through env["rack.early_hints"].
    assert_equal [103], hints.map(&:status)
    assert_includes hints.first["link"], "<#{stylesheet}>; rel=preload"

    check_asset(stylesheet, "text/css; charset=utf-8")
    check_asset(script, "text/javascript; charset=utf-8")
    create_a_post_through_the_form
  end

  # A fingerprinted asset as the engine answers it: Rails adds no immutable cache-control and
  # no etag of this form, so these say Rails was not called.
  def check_asset(path, type)
    file = File.join(RAILS_DIR, "public", path)
    res, = request("GET", path)
    assert_equal [200, type, IMMUTABLE], [res.status, res["content-type"], res["cache-control"]]
    assert_equal File.binread(file), res.body
    assert_match(/\A"\h+\.\h+-\h+"\z/, res["etag"])
    not_modified, = request("GET", path, "If-None-Match" => res["etag"])
    assert_equal 304, not_modified.status
    part, = request("GET", path, "Range" => "bytes=0-9")
    assert_equal [206, File.binread(file, 10)], [part.status, part.body]
  end

  def create_a_post_through_the_form
    form, = request("GET", "/posts/new")
    assert_equal 200, form.status
    token = form.body[/name="authenticity_token" value="([^"]+)"/, 1] or flunk "no CSRF token:\n#{form.body}"
    cookie = session_cookie(form)
    fields = { "post[title]" => "Sent to UP!", "post[body]" => "Through the scaffold's form." }

    refused, = request("POST", "/posts", { "Cookie" => cookie }, URI.encode_www_form(fields))
    assert_equal 422, refused.status, "a POST without the CSRF token was accepted"

    created, = request("POST", "/posts", { "Cookie" => cookie },
                       URI.encode_www_form(fields.merge("authenticity_token" => token)))
    assert_equal 302, created.status, created.body
    path = URI(created["location"]).path
    assert_match(%r{\A/posts/\d+\z}, path)

    shown, = request("GET", path, "Cookie" => session_cookie(created))
    assert_equal 200, shown.status
    assert_includes shown.body, "Post was successfully created."
    assert_includes shown.body, "Sent to UP!"
    assert_includes request("GET", "/posts").first.body, "Through the scaffold&#39;s form."
  end

  # One request on a new connection: the final response, and the 1xx ones before it.
  def request(method, path, headers = {}, body = "")
    head = { "Host" => "127.0.0.1:#{@port}", "Connection" => "close",
             "Content-Length" => body.bytesize }
    head["Content-Type"] = "application/x-www-form-urlencoded" if method == "POST"
    sock = connect
    sock.write("#{method} #{path} HTTP/1.1\r\n#{head.merge(headers).map { |k, v| "#{k}: #{v}\r\n" }.join}\r\n#{body}")
    hints = []
    while (res = read_response(sock)) && res.status < 200
      hints << res
    end
    flunk "#{method} #{path}: no response" unless res
    [res, hints]
  end

  def session_cookie(response)
    response["set-cookie"].to_s[/_posts_app_session=[^;]+/] or flunk "no session cookie: #{response.headers}"
  end
end
