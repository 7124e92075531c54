# frozen_string_literal: true

# The example apps on both runtimes, each started by the same command but for the runtime's
# name (exe/up_ruby, exe/up_node; one worker, one app thread): every request goes to both,
# and both answer with the same status, the same headers but `date`, and the same body.
# The Roda and Sinatra apps are unmodified Roda and Sinatra from RubyGems; their session
# cookies, encrypted on one runtime, open on the other.
require_relative "helper"
require_relative "support/up_node_process"
require "json"

class TestUpNodeApps < Minitest::Test
  include UpTestHelpers
  include UpNodeProcess

  ARGS = %w[-w 1 -t 1].freeze
  # Headers that are not the app's: the clock's `date`.
  RUNTIME_HEADERS = %w[date].freeze

  def test_hello_answers_the_same_on_both
    serve_on_both("examples/hello/config.ru")
    assert_same_answers(["GET / HTTP/1.1\r\nHost: h\r\n\r\n",
                         "POST /anything?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc",
                         "GET / HTTP/1.0\r\n\r\n"])
  end

  # The env lists each server's own objects by their inspect (UP!'s input, error stream and
  # early hints: other classes on each runtime, and addresses that change on every run) and
  # the server's own port; those are compared as placeholders, the rest as it is, but for
  # rack.hijack? and rack.hijack, which up_node does not have (docs/opal.md, Known gaps).
  def test_env_answers_the_same_on_both
    serve_on_both("examples/env/config.ru")
    requests = ["GET /some/path?x=1&y=%C3%BC HTTP/1.1\r\nHost: example.test\r\nX-Custom: a\r\n" \
                "Cookie: k=v\r\n\r\n",
                "POST /form HTTP/1.1\r\nHost: h:8080\r\nContent-Type: application/x-www-form-urlencoded\r\n" \
                "Content-Length: 7\r\n\r\nname=Jo"]
    ruby, node = assert_same_answers(requests) { |res, port| env_listing(res, port) }
    assert_includes node.first.body, 'QUERY_STRING = "x=1&y=%C3%BC"'
    assert_includes ruby.last.body, 'CONTENT_TYPE = "application/x-www-form-urlencoded"'
  end

  def test_roda_routes_params_json_halt_and_cookies_answer_the_same_on_both
    serve_on_both("examples/roda/config.ru")
    form = "Content-Type: application/x-www-form-urlencoded\r\n"
    ruby, node = assert_same_answers(
      ["GET / HTTP/1.1\r\nHost: h\r\n\r\n",
       "GET /hello/J%C3%BCrgen HTTP/1.1\r\nHost: h\r\n\r\n",
       "GET /items/3 HTTP/1.1\r\nHost: h\r\n\r\n",
       "PUT /items/4 HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
       "DELETE /items/5 HTTP/1.1\r\nHost: h\r\n\r\n",
       "GET /params?a=1&b[]=2&b[]=3&c[d]=%E2%9C%93 HTTP/1.1\r\nHost: h\r\n\r\n",
       "POST /params?q=1 HTTP/1.1\r\nHost: h\r\n#{form}Content-Length: 19\r\n\r\nname=Ada&tags[]=x+y",
       "POST /greet HTTP/1.1\r\nHost: h\r\n#{form}Content-Length: 8\r\n\r\nname=Bob",
       "POST /greet HTTP/1.1\r\nHost: h\r\n#{form}Content-Length: 0\r\n\r\n",
       "GET /admin HTTP/1.1\r\nHost: h\r\n\r\n",
       "GET /nope HTTP/1.1\r\nHost: h\r\n\r\n",
       "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n",
       "GET /flavour HTTP/1.1\r\nHost: h\r\nCookie: flavour=ginger; other=1\r\n\r\n"]
    )
    # Roda matches path segments as they come, escaped (its unescape_path plugin decodes them).
    assert_equal ["Hello, J%C3%BCrgen!\n", %({"id":3,"name":"item 3"})], [ruby[1].body, node[2].body]
    assert_equal({ "q" => "1", "name" => "Ada", "tags" => ["x y"] }, JSON.parse(node[6].body))
    assert_equal [422, 403, 404], node.values_at(8, 9, 10).map(&:status)
    assert_equal ["flavour=oatmeal; path=/"], node[12].headers["set-cookie"]
  end

  # A session cookie is new on every response (a random key and iv), so its value is compared
  # by what it holds: each runtime opens the other's, and a forged one opens on neither.
  def test_roda_session_round_trips_across_both
    serve_on_both("examples/roda/config.ru")
    from_ruby, = assert_same_answer(visits("POST")) { |res, _port| without_session_value(res) }
    assert_equal %({"visits":1}), from_ruby.body
    cookie = session_cookie(from_ruby)

    counted = assert_same_answer(visits("POST", cookie)) { |res, _port| without_session_value(res) }
    assert_equal [%({"visits":2})] * 2, counted.map(&:body)
    from_node = session_cookie(counted[1])
    assert_equal %({"visits":3}), raw_request(visits("POST", from_node), port: @ruby_port).body

    read = assert_same_answer(visits("GET", from_node))
    assert_equal [%({"visits":2})] * 2, read.map(&:body)
    assert_nil read[1].headers["set-cookie"], "a session read but not changed is not sent again"

    # One character in the middle changed: its HMAC no longer matches, so no session.
    forged = cookie.sub(/\A(.{40})(.)/) { "#{$1}#{$2 == "A" ? "B" : "A"}" }
    assert_equal [%({"visits":0})] * 2, assert_same_answer(visits("GET", forged)).map(&:body)

    logout = assert_same_answer("POST /logout HTTP/1.1\r\nHost: h\r\nCookie: roda.session=#{from_node}\r\n" \
                                "Content-Length: 0\r\n\r\n")
    assert_match(/\Aroda\.session=; .*max-age=0/, logout[1]["set-cookie"])
  end

  # examples/sinatra, unmodified Sinatra 4 from RubyGems (with Mustermann, Tilt,
  # rack-protection and rack-session): routes with params, content types, halt, redirect,
  # ERB views in a layout and an inline template, error handlers, the default protection.
  # Every response sets the session cookie, new each time (a random salt and iv), so its
  # value is compared by what it holds, in the session test below.
  def test_sinatra_routes_views_and_errors_answer_the_same_on_both
    serve_on_both("examples/sinatra/config.ru")
    form = "Content-Type: application/x-www-form-urlencoded\r\n"
    ruby, node = assert_same_answers(
      ["GET / HTTP/1.1\r\nHost: localhost\r\n\r\n",
       "GET /hello/J%C3%BCrgen HTTP/1.1\r\nHost: localhost\r\n\r\n",
       "GET /items/3 HTTP/1.1\r\nHost: localhost\r\n\r\n",
       "POST /greet HTTP/1.1\r\nHost: localhost\r\n#{form}Content-Length: 8\r\n\r\nname=Bob",
       "POST /greet HTTP/1.1\r\nHost: localhost\r\n#{form}Content-Length: 0\r\n\r\n",
       "GET /admin HTTP/1.1\r\nHost: localhost\r\n\r\n",
       "GET /old HTTP/1.1\r\nHost: localhost\r\n\r\n",
       "GET /page/Ada HTTP/1.1\r\nHost: localhost\r\n\r\n",
       "GET /page/J%C3%BCrgen?items=a,%3Cb%3E HTTP/1.1\r\nHost: localhost\r\n\r\n",
       "GET /inline HTTP/1.1\r\nHost: localhost\r\n\r\n",
       "GET /teapot HTTP/1.1\r\nHost: localhost\r\n\r\n",
       "GET /nope HTTP/1.1\r\nHost: localhost\r\n\r\n",
       "HEAD /hello/Ada HTTP/1.1\r\nHost: localhost\r\n\r\n",
       "GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n"]
    ) { |res, _port| sinatra_comparable(res) }
    assert_equal ["Hello, Jürgen!\n", %({"id":3,"name":"item 3"})], node[1, 2].map { |res| res.body.force_encoding("UTF-8") }
    assert_equal [200, 422, 403, 302, 418, 404, 403], node.values_at(3, 4, 5, 6, 10, 11, 13).map(&:status)
    assert_equal "http://localhost/hello/Ada", node[6]["location"]
    assert_includes node[8].body, "<li>&lt;b&gt;</li>"
    assert_equal "<p>Inline, 3 times: 0 1 2 </p>", node[9].body.strip
    assert_equal ["I'm a teapot: short and stout\n", "Nothing at /nope\n", "Host not permitted"], node.values_at(10, 11, 13).map(&:body)
    assert_equal ruby.map(&:status), node.map(&:status)
  end

  # The session cookie (rack-session's AES-256-GCM, JSON inside) made on one runtime opens
  # on the other; a forged one opens on neither.
  def test_sinatra_session_round_trips_across_both
    serve_on_both("examples/sinatra/config.ru")
    from_ruby = raw_request(sinatra_visits("POST"), port: @ruby_port)
    assert_equal %({"visits":1}), from_ruby.body
    counted = assert_same_answer(sinatra_visits("POST", rack_session(from_ruby))) { |res, _port| sinatra_comparable(res) }
    assert_equal [%({"visits":2})] * 2, counted.map(&:body)
    from_node = rack_session(counted[1])
    assert_equal %({"visits":3}), raw_request(sinatra_visits("POST", from_node), port: @ruby_port).body
    read = assert_same_answer(sinatra_visits("GET", from_node)) { |res, _port| sinatra_comparable(res) }
    assert_equal [%({"visits":2})] * 2, read.map(&:body)

    forged = from_node.sub(/\A(.{40})(.)/) { "#{$1}#{$2 == "A" ? "B" : "A"}" }
    assert_equal [%({"visits":0})] * 2, assert_same_answer(sinatra_visits("GET", forged)) { |res, _port| sinatra_comparable(res) }.map(&:body)
  end

  private

  # Starts rackup on exe/up_ruby and on exe/up_node with the same arguments; @ruby_port and
  # @node_port are theirs. Both are stopped in teardown.
  def serve_on_both(rackup)
    ruby = CLIProcess.new("-b", "127.0.0.1", "-p", "0", *ARGS, rackup)
    (@servers ||= []) << ruby
    @ruby_port = ruby.port
    start_up_node(*ARGS, rackup)
    @node_port = @port
  end

  # Sends request (on a connection of its own, which it closes) to up_ruby, then to up_node,
  # and asserts the same status, headers but RUNTIME_HEADERS, and body; the block, if given,
  # maps a response and the port it came from to what is compared. Returns [ruby, node].
  def assert_same_answer(request, &normalize)
    normalize ||= ->(res, _port) { comparable(res) }
    request = request.sub("\r\n\r\n", "\r\nConnection: close\r\n\r\n")
    ruby = raw_request(request, port: @ruby_port)
    node = raw_request(request, port: @node_port)
    line = request.lines.first.strip
    assert_equal [ruby.status, ruby.reason], [node.status, node.reason], "status line of #{line}"
    assert_equal normalize.call(ruby, @ruby_port), normalize.call(node, @node_port), line
    [ruby, node]
  end

  # assert_same_answer for each request; returns [ruby responses, node responses].
  def assert_same_answers(requests, &normalize)
    requests.map { |request| assert_same_answer(request, &normalize) }.transpose
  end

  # The headers (by name, without RUNTIME_HEADERS; each name's values in order) and the body.
  def comparable(res)
    headers = res.headers.reject { |name, _| RUNTIME_HEADERS.include?(name) }.sort.to_h
    { "headers" => headers, "body" => res.body }
  end

  def env_listing(res, port)
    body = res.body.gsub(port.to_s, "PORT").gsub(/ = #<[^\n]*>$/, " = #<server object>")
               .gsub(/^rack\.hijack\?? = [^\n]*\n/, "")
    comparable(res).merge("body" => body, "headers" => comparable(res)["headers"].except("content-length"))
  end

  # Sinatra's answers as compared: the session cookie's value left out (see the session
  # test).
  def sinatra_comparable(res)
    compared = comparable(res)
    headers = compared["headers"]
    headers["set-cookie"] = headers["set-cookie"]&.map { |c| c.sub(/\Arack\.session=[^;]+/, "rack.session=VALUE") }
    compared
  end

  def sinatra_visits(method, cookie = nil)
    cookie_line = "Cookie: rack.session=#{cookie}\r\n" if cookie
    "#{method} /visits HTTP/1.1\r\nHost: localhost\r\n#{cookie_line}Content-Length: 0\r\n\r\n"
  end

  def rack_session(res)
    res["set-cookie"][/\Arack\.session=([^;]+)/, 1] or flunk "no session cookie in #{res.headers.inspect}"
  end

  def visits(method, cookie = nil)
    cookie_line = "Cookie: roda.session=#{cookie}\r\n" if cookie
    "#{method} /visits HTTP/1.1\r\nHost: h\r\n#{cookie_line}Content-Length: 0\r\n\r\n"
  end

  def session_cookie(res)
    res["set-cookie"][/\Aroda\.session=([^;]+)/, 1] or flunk "no session cookie in #{res.headers.inspect}"
  end

  def without_session_value(res)
    cookies = res.headers["set-cookie"].to_a.map { |c| c.sub(/\Aroda\.session=[^;]+/, "roda.session=VALUE") }
    comparable(res).tap { |c| c["headers"]["set-cookie"] = cookies }
  end
end
