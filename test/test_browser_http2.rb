# frozen_string_literal: true

# A page with 50 assets loaded by headless Chromium (test/support/browser.rb) over HTTPS, where
# ALPN picks h2: 20 stylesheets and 20 images that the engine's static handler serves from a
# temporary directory (--static /assets=DIR), and 10 images the app draws
# (test/rackup/asset_page.ru), on up_ruby and `up`. The browser's own record says how each
# came: the Performance API's resource entries (one per asset, each with nextHopProtocol "h2",
# status 200 and the body size written), the navigation's protocol, every image decoded at its
# own size and every stylesheet applied. The browser trusts the test's certificate alone
# (--ignore-certificate-errors-spki-list: the hash of its public key).
require "base64"
require "fileutils"
require "openssl"
require "tmpdir"
require_relative "helper"
require_relative "support/browser"
require_relative "support/runtime_process"
require_relative "support/test_certificates"

class TestBrowserHTTP2 < Minitest::Test
  APP = "test/rackup/asset_page.ru"
  STYLES = 20
  IMAGES = 20
  APP_IMAGES = 10
  HTTPS_LINE = %r{listening on (?:\S+, )*https://127\.0\.0\.1:(\d+)}
  # Each resource entry as [path, protocol, status, decoded body size].
  RESOURCES = "performance.getEntriesByType('resource').map((e) => " \
              "[new URL(e.name).pathname, e.nextHopProtocol, e.responseStatus, e.decodedBodySize])"
  IMAGE_SIZES = "[...document.images].map((i) => [i.getAttribute('src'), i.complete, i.naturalWidth])"
  STYLE_VALUES = "Array.from({ length: #{STYLES} }, (_, i) => " \
                 "getComputedStyle(document.documentElement).getPropertyValue(`--style-${i}`).trim())"

  # A cold Opal build of the app for `up` on a busy machine, then the browser.
  def time_limit_seconds
    90
  end

  def setup
    @dir = Dir.mktmpdir("up-h2-assets")
    @sizes = {}
    STYLES.times { |i| write("css/#{i}.css", ":root { --style-#{i}: #{i}; }\n") }
    IMAGES.times do |i|
      size = 10 + i
      write("img/#{i}.svg", %(<svg xmlns="http://www.w3.org/2000/svg" width="#{size}" height="#{size}">) +
                            %(<rect width="#{size}" height="#{size}" fill="#00#{format("%02x", i * 10)}00"/></svg>\n))
    end
  end

  def teardown
    @browser&.close
    @server&.stop
    FileUtils.remove_entry(@dir) if @dir
  end

  %w[up_ruby up].each do |runtime|
    define_method("test_a_page_and_its_50_assets_load_over_h2_on_#{runtime}") do
      serve(runtime)
      page = @browser.open_page("https://127.0.0.1:#{@port}/", timeout: 30)

      assert_equal "h2", page.evaluate("performance.getEntriesByType('navigation')[0].nextHopProtocol")
      resources = page.evaluate(RESOURCES).sort
      assert_equal expected_paths.sort, resources.map(&:first), "one resource entry per asset"
      resources.each do |path, protocol, status, size|
        assert_equal ["h2", 200], [protocol, status], path
        assert_equal @sizes.fetch(path), size, path if @sizes.key?(path)
      end
      images = page.evaluate(IMAGE_SIZES)
      assert_equal IMAGES + APP_IMAGES, images.size
      images.each do |src, complete, width|
        n = src[/(\d+)\.svg\z/, 1].to_i
        assert_equal [true, src.start_with?("/app/") ? 100 + n : 10 + n], [complete, width], src
      end
      assert_equal Array.new(STYLES, &:to_s), page.evaluate(STYLE_VALUES), "every stylesheet applied"
      assert_empty page.errors
    end
  end

  private

  def write(name, text)
    path = File.join(@dir, name)
    FileUtils.mkdir_p(File.dirname(path))
    File.write(path, text)
    @sizes["/assets/#{name}"] = text.bytesize
  end

  def expected_paths
    @sizes.keys + Array.new(APP_IMAGES) { |i| "/app/#{i}.svg" }
  end

  def serve(runtime)
    cert = TestCertificates.ca.issue("localhost")
    @server = RuntimeProcess.spawn(runtime, APP, "-s", "-c", cert.cert_file, "-k", cert.key_file,
                                   "--static", "/assets=#{@dir}")
    @port = @server.wait_for(HTTPS_LINE, timeout: 60)[1].to_i
    spki = Base64.strict_encode64(OpenSSL::Digest::SHA256.digest(cert.cert.public_key.public_to_der))
    @browser = Browser.open(flags: ["--ignore-certificate-errors-spki-list=#{spki}"])
  end
end
