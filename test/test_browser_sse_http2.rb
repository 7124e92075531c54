# frozen_string_literal: true

# An EventSource and a WebSocket in a real browser (headless Chromium, test/support/browser.rb)
# on an HTTPS page that came over HTTP/2, on the runtimes whose engine speaks HTTP/2 (up_ruby,
# up). The event stream stays on its h2 stream; the WebSocket opens on a stream of the same
# connection by RFC 8441's extended CONNECT, which Chromium uses once the server advertises
# SETTINGS_ENABLE_CONNECT_PROTOCOL: the app says so on stderr from its on_open. The
# Performance API says which protocol carried the page and the stream. The same over raw
# frames and curl: test_http2.rb, test_up_http2.rb, test_http2_websocket.rb.
require_relative "helper"
require_relative "support/browser"
require_relative "support/runtime_process"
require_relative "support/test_certificates"

class TestBrowserSSEHTTP2 < Minitest::Test
  CA = TestCertificates.ca
  APP = "test/rackup/sse_page.ru"
  # The first three events as "id data", or what went wrong.
  EVENTS = "new Promise((done) => { const got = []; const source = new EventSource('/events'); " \
           "source.onmessage = (e) => { got.push(`${e.lastEventId} ${e.data}`); " \
           "if (got.length === 3) { source.close(); done(got); } }; " \
           "source.onerror = () => done(['error', source.readyState]); })"
  NAVIGATION = "performance.getEntriesByType('navigation')[0].nextHopProtocol"
  STREAM = "performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/events')).map((e) => e.nextHopProtocol)"
  # The WebSocket's first message and its echo, or what went wrong.
  WEBSOCKET = "new Promise((done) => { const got = []; const ws = new WebSocket(`wss://${location.host}/ws`); " \
              "ws.onopen = () => ws.send('echo me'); " \
              "ws.onmessage = (e) => { got.push(e.data); if (got.length === 2) { ws.close(); done(got); } }; " \
              "ws.onerror = () => done(['error']); })"

  # A cold Opal build of the app for up on a busy machine, then the browser.
  def time_limit_seconds
    60
  end

  def teardown
    @browser&.close
    @server&.stop
  end

  %w[up_ruby up].each do |runtime|
    define_method("test_an_event_source_and_a_websocket_on_a_page_over_h2_stay_on_h2_on_#{runtime}") do
      cert = CA.issue("localhost")
      @server = RuntimeProcess.spawn(runtime, APP, "-s", "-c", cert.cert_file, "-k", cert.key_file)
      port = @server.wait_for(%r{listening on (?:\S+, )*https://127\.0\.0\.1:(\d+)}, timeout: 45)[1].to_i
      @browser = Browser.open
      # The test's own CA is not the browser's: its certificate errors are waived.
      @browser.command("Security.setIgnoreCertificateErrors", { ignore: true })
      page = @browser.open_page("https://127.0.0.1:#{port}/")
      assert_equal "h2", page.evaluate(NAVIGATION), "the page came over HTTP/2"
      assert_equal ["0 tick 0", "1 tick 1", "2 tick 2"], page.evaluate(EVENTS)
      assert_equal ["h2"], page.evaluate(STREAM), "the event stream, on its h2 stream"
      assert_equal ["opened over HTTP/2", "echo me"], page.evaluate(WEBSOCKET)
      assert_equal "HTTP/2", @server.wait_for(/websocket opened over (\S+)/, timeout: 5)[1], "the app's on_open saw it"
      assert_empty page.errors
    end
  end
end
