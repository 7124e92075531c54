# frozen_string_literal: true

# Apps written as the Rack, Roda and Sinatra guides teach them (test/apps/*), each started on
# up_ruby, up_node and `up` by the same command but for the runtime's name (one worker, one
# app thread), then walked through the same visit: every request goes to each runtime with
# that runtime's own cookies (a browser's cookie jar per runtime), and each answers with the
# same status, headers but `date`, and body. A session cookie is new on every response (a
# random key or salt), so its value is compared by what it opens: the cookie up_ruby made is
# then sent to the Opal runtimes, and theirs to up_ruby, and each reads the same session.
require_relative "helper"
require_relative "support/runtime_process"
require "zlib"

class TestAppCorpus < Minitest::Test
  include UpTestHelpers

  APPS = File.join(CLIProcess::ROOT, "test", "apps")
  RUNTIMES = Conformance::RUNTIMES.keys.freeze
  # Headers that are the server's, not the app's.
  RUNTIME_HEADERS = %w[date].freeze

  # A cold Opal build of each app on a busy machine.
  def time_limit_seconds
    240
  end

  FORM = { "Content-Type" => "application/x-www-form-urlencoded" }.freeze

  def test_sinatra_with_its_defaults
    serve("sinatra_defaults")
    visit("rack.session", [
      ["GET", "/"],
      ["POST", "/notes", FORM, "text=Buy+milk"],
      ["GET", "/"],
      ["GET", "/"],
      ["POST", "/notes", FORM, "text=J%C3%BCrgen%27s+%3Cb%3Ebirthday%3C%2Fb%3E"],
      ["GET", "/"],
      ["POST", "/notes", FORM, "text=+"],
      ["POST", "/visit"],
      ["POST", "/visit"],
      ["GET", "/notes.json"],
      ["GET", "/style.css"],
      ["GET", "/private"],
      ["GET", "/boom"],
      ["GET", "/nowhere"],
      ["HEAD", "/"],
      ["POST", "/logout"],
      ["GET", "/notes.json"]
    ])
    assert_session_opens_across("rack.session", ["POST", "/visit"], ["GET", "/notes.json"]) do |body|
      body[/"visits":\d+/]
    end
  end

  def test_roda_with_render_sessions_flash_and_json
    serve("roda_todo")
    visit("roda.session", [
      ["GET", "/"],
      ["POST", "/todos", FORM, "title=Write+tests"],
      ["GET", "/"],
      ["GET", "/"],
      ["POST", "/todos", FORM, "title=%3Cscript%3E+%C3%BCber"],
      ["POST", "/todos", FORM, "title="],
      ["GET", "/todos"],
      ["GET", "/todos/1"],
      ["PATCH", "/todos/0"],
      ["GET", "/todos/7"],
      ["DELETE", "/todos/1"],
      ["GET", "/todos"],
      ["GET", "/robots.txt"],
      ["GET", "/crash"],
      ["GET", "/nowhere"],
      ["POST", "/reset"],
      ["GET", "/"]
    ])
    assert_session_opens_across("roda.session", ["POST", "/todos", FORM, "title=x"], ["GET", "/todos"]) { |body| body }
  end

  def test_rack_builder_middleware_stack
    serve("rack_stack")
    visit("stack.session", [
      ["GET", "/"],
      ["GET", "/"],
      ["POST", "/lang", FORM, "lang=fr"],
      ["GET", "/"],
      ["GET", "/public/site.css"],
      ["GET", "/files/readme.txt"],
      ["GET", "/files/readme.txt", { "Range" => "bytes=2-5" }],
      ["GET", "/files/missing.txt"],
      ["GET", "/api/things/1?q=a&list[]=1&list[]=2"],
      ["POST", "/api/form", FORM, "name=J%C3%BCrgen&n=1"],
      ["GET", "/big"],
      ["GET", "/big", { "Accept-Encoding" => "gzip" }],
      ["GET", "/cached"],
      ["GET", "/cached", { "If-None-Match" => 'W/"0d83a8e5c9bb32d18e82d4c0a3e2e4e9"' }],
      ["HEAD", "/cached"],
      ["POST", "/session", FORM, "_method=DELETE"],
      ["GET", "/"],
      ["GET", "/nothing"]
    ])
    assert_session_opens_across("stack.session", ["GET", "/"], ["GET", "/"]) { |body| body[/Views: \d+/] }
  end

  def test_classic_sinatra_filters_streaming_cache_and_files
    serve("sinatra_classic")
    visit("rack.session", [
      ["GET", "/"],
      ["GET", "/?name=%C3%89mile"],
      ["GET", "/agent", { "User-Agent" => "curl/8.0" }],
      ["GET", "/agent", { "User-Agent" => "Firefox" }],
      ["GET", "/numbers/21"],
      ["GET", "/numbers/xx"],
      ["GET", "/stream"],
      ["GET", "/etag"],
      ["GET", "/etag", { "If-None-Match" => '"fixed-version"' }],
      ["GET", "/modified"],
      ["GET", "/modified", { "If-Modified-Since" => "Tue, 02 Jan 2024 03:04:05 GMT" }],
      ["GET", "/download"],
      ["GET", "/notes.txt"],
      ["GET", "/teapot"],
      ["GET", "/where", { "Referer" => "http://localhost/from" }],
      ["POST", "/back", { "Referer" => "http://localhost/came/from" }],
      ["GET", "/items"],
      ["GET", "/items.json"],
      ["GET", "/nope"]
    ])
  end

  def test_rack_streaming_bodies_early_hints_and_the_env
    serve("rack_streaming")
    answers = visit("none", [
      ["GET", "/each"],
      ["GET", "/callable"],
      ["GET", "/hints"],
      ["GET", "/server"],
      ["GET", "/server"],
      ["GET", "/empty"],
      ["GET", "/other"]
    ])
    assert_equal [103, ["</style.css>; rel=preload; as=style", "</app.js>; rel=preload; as=script"]],
                 answers["up_ruby"][2].interim.first.then { |res| [res.status, res.headers["link"]] }
  end

  private

  # Starts test/apps/<app>/config.ru on every runtime; @ports: runtime => port.
  def serve(app)
    rackup = File.join("test", "apps", app, "config.ru")
    servers = RUNTIMES.to_h { |runtime| [runtime, RuntimeProcess.spawn(runtime, rackup, "-w", "1", "-t", "1")] }
    (@servers ||= []).concat(servers.values)
    @ports = servers.transform_values { |server| server.wait_listening(timeout: 150) }
    @jars = RUNTIMES.to_h { |runtime| [runtime, {}] }
  end

  # Sends each step ([method, path, headers, body]) to every runtime with its own cookies,
  # and asserts the same answers; returns them, runtime => responses.
  def visit(session, steps)
    answers = RUNTIMES.to_h { |runtime| [runtime, []] }
    steps.each do |step|
      RUNTIMES.each { |runtime| answers[runtime] << send_step(runtime, step) }
      expected = comparable(answers["up_ruby"].last, session)
      differ = RUNTIMES.drop(1).reject { |runtime| comparable(answers[runtime].last, session) == expected }
      RUNTIMES.drop(1).each do |runtime|
        assert_equal expected, comparable(answers[runtime].last, session), "#{step[0]} #{step[1]} differs on #{differ.join(' and ')}"
      end
    end
    answers
  end

  # A step on runtime, with that runtime's cookie jar; the jar takes the answer's cookies.
  def send_step(runtime, (method, path, headers, body), jar: @jars[runtime])
    headers = (headers || {}).dup
    headers["Cookie"] = jar.map { |name, value| "#{name}=#{value}" }.join("; ") unless jar.empty?
    headers["Content-Length"] = body.to_s.bytesize.to_s unless method == "GET" || method == "HEAD"
    lines = headers.map { |name, value| "#{name}: #{value}\r\n" }.join
    sock = connect(@ports.fetch(runtime))
    sock.write("#{method} #{path} HTTP/1.1\r\nHost: localhost\r\n#{lines}Connection: close\r\n\r\n#{body}")
    # 1xx responses (103 Early Hints) come first, then the response.
    interim = []
    res = read_response(sock, head: method == "HEAD")
    while res.status < 200
      interim << res
      res = read_response(sock, head: method == "HEAD")
    end
    res = Answer.new(res, interim)
    res.headers.fetch("set-cookie", []).each do |cookie|
      name, value = cookie[/\A[^;]*/].split("=", 2)
      cookie.match?(/max-age=0|expires=Thu, 01 Jan 1970/i) ? jar.delete(name) : jar[name] = value
    end
    res
  end

  # A response and the 1xx responses that came before it.
  Answer = Struct.new(:response, :interim) do
    %i[status reason headers body].each { |name| define_method(name) { response.public_send(name) } }
    def [](name) = response[name]
  end

  # Status, headers but RUNTIME_HEADERS (the session cookie's value left out), body, and the
  # 1xx responses before it.
  def comparable(res, session)
    headers = res.headers.reject { |name, _| RUNTIME_HEADERS.include?(name) }.sort.to_h
    headers["set-cookie"] = headers["set-cookie"]&.map { |c| c.sub(/\A#{Regexp.escape(session)}=[^;]*/, "#{session}=VALUE") }
    body = res.body
    # gzip bytes hold the time they were made; what they hold is compared.
    if headers["content-encoding"] == ["gzip"]
      body = Zlib.gunzip(body)
      headers.delete("content-length")
    end
    if body&.include?("<!-- /BACKTRACE -->")
      body = development_error_page(body)
      headers.delete("content-length")
    end
    interim = res.interim.map { |one| [one.status, one.headers.reject { |name, _| RUNTIME_HEADERS.include?(name) }.sort.to_h] }
    { "status" => [res.status, res.reason], "headers" => headers, "body" => body, "interim" => interim }
  end

  # A development error page (Sinatra's show_exceptions) without what is each runtime's
  # own: the backtrace (its frames are the runtime's, Ruby's or the compiled JavaScript's),
  # the method named in the first frame (an Opal backtrace names none), the env table (the
  # server's objects) and the session cookie's value.
  def development_error_page(body)
    body.sub(%r{<div id="backtrace".*<!-- /BACKTRACE -->}m, "BACKTRACE").sub(%r{<div id="rack">.*<!-- /RACK ENV -->}m, "RACK ENV")
        .sub(%r{(<strong>location:</strong> <code>)[^\n]*}, "\\1LOCATION").gsub(%r{&quot;[A-Za-z0-9+/=%]{40,}&quot;}, "VALUE")
  end

  # The session cookie `write` step made on one runtime, read by `read` step on each other:
  # all see what the block picks from the body.
  def assert_session_opens_across(session, write, read)
    RUNTIMES.each do |maker|
      jar = {}
      send_step(maker, write, jar: jar)
      send_step(maker, write, jar: jar)
      refute_nil jar[session], "no #{session} cookie from #{maker}"
      seen = RUNTIMES.to_h { |reader| [reader, yield(send_step(reader, read, jar: jar.dup).body)] }
      assert_equal [seen[maker]], seen.values.uniq, "#{maker}'s #{session} cookie read on each runtime"
      refute_nil seen[maker]
    end
  end
end
