# frozen_string_literal: true

# An EventSource in a real browser on an HTTPS page that came over HTTP/2, on the runtimes
# whose engine speaks HTTP/2 (up_ruby, up). An event stream is taken over HTTP/1.1 only: the
# engine answers its request on the h2 connection with RST_STREAM HTTP_1_1_REQUIRED, headless
# Chromium (test/support/browser.rb) retries it over HTTP/1.1 by itself, and the page gets the
# events. The Performance API says which protocol carried the page and the stream. The same
# over raw frames and curl: test_http2.rb, test_up_http2.rb.
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

  # A cold Opal build of the app for up on a busy machine, then the browser.
  def time_limit_seconds
    60
  end

  def teardown
    @browser&.close
    @server&.stop
  end

  %w[up_ruby up].each do |runtime|
    define_method("test_an_event_source_on_a_page_over_h2_gets_its_events_over_http_1_1_on_#{runtime}") do
      cert = CA.issue("localhost")
      @server = RuntimeProcess.spawn(runtime, APP, "-s", "-c", cert.cert_file, "-k", cert.key_file)
      port = @server.wait_for(%r{listening on (?:\S+, )*https://127\.0\.0\.1:(\d+)}, timeout: 45)[1].to_i
      @browser = Browser.open
      # The test's own CA is not the browser's: its certificate errors are waived.
      @browser.command("Security.setIgnoreCertificateErrors", { ignore: true })
      page = @browser.open_page("https://127.0.0.1:#{port}/")
      assert_equal "h2", page.evaluate(NAVIGATION), "the page came over HTTP/2"
      assert_equal ["0 tick 0", "1 tick 1", "2 tick 2"], page.evaluate(EVENTS)
      assert_equal ["http/1.1"], page.evaluate(STREAM), "the event stream, retried over HTTP/1.1"
      assert_empty page.errors
    end
  end
end
