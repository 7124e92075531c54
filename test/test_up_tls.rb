# frozen_string_literal: true

# HTTPS on `up` (issue 21): the addon has no TLS transport yet, so a start that asks for HTTPS
# (-s, or an ssl:// bind) stops with one line and status 1 rather than serve plaintext.
require_relative "helper"
require_relative "support/test_certificates"
require_relative "support/up_process"

class TestUpTLS < Minitest::Test
  include UpTestHelpers
  include UpProcess

  CA = TestCertificates.ca
  REFUSAL = /up: HTTPS \(-s, ssl:\/\/ binds\) is not supported by up yet/

  def localhost
    @localhost ||= CA.issue("localhost")
  end

  def start_refused(*args)
    server = CLIProcess.new("-w", "1", *args, UpProcess::FEATURES, command: [RbConfig.ruby, UpProcess::EXE],
                            env: { "XDG_CACHE_HOME" => UpProcess::CACHE }, wait: false)
    (@up_processes ||= []) << server
    refute server.wait(timeout: 30).success?
    server.output
  end

  def test_secure_with_a_certificate_refuses_to_start_rather_than_serve_plaintext
    output = start_refused("-b", "127.0.0.1", "-p", "0", "-s", "-c", localhost.cert_file, "-k", localhost.key_file)
    assert_match REFUSAL, output
    refute_match(/listening on/, output)
  end

  def test_an_ssl_bind_refuses_to_start
    bind = "ssl://127.0.0.1:0?cert=#{localhost.cert_file}&key=#{localhost.key_file}"
    output = start_refused("-b", bind)
    assert_match REFUSAL, output
    refute_match(/listening on/, output)
  end

  def test_a_plain_bind_beside_an_ssl_one_refuses_too
    bind = "ssl://127.0.0.1:0?cert=#{localhost.cert_file}&key=#{localhost.key_file}"
    output = start_refused("-b", "tcp://127.0.0.1:0", "-b", bind)
    assert_equal 1, output.lines.grep(REFUSAL).size, output
  end
end
