# frozen_string_literal: true

# The command line every runtime shares (docs/configuration.md): -v, -h, the one-line errors
# (the same words with the runtime's own name, status 1, nothing started), and a stop on TERM
# or INT with status 0.
require_relative "helper"
require "socket"
require "up/options"
require "up/version"

class TestConformanceCLI < ConformanceTest
  def run_command(*args)
    Conformance.run_command(*args)
  end

  def test_version_prints_the_name_and_version
    status, out = run_command("-v")
    assert status.success?
    assert_equal "UP! #{Up::VERSION}\n", out
  end

  def test_help_prints_the_usage_and_every_option
    status, out = run_command("-h")
    assert status.success?
    assert out.start_with?("Usage: #{runtime} [options] [config.ru]\n"), out
    flags = Up::Options::SETTINGS.map(&:flag).grep(/\A--/)
    (flags + %w[--version --help]).each { |flag| assert_includes out, flag }
  end

  # argv => the one line that says what is wrong
  USAGE_ERRORS = {
    %w[--frobnicate] => "invalid option: --frobnicate",
    %w[--port abc] => "invalid argument: --port abc",
    %w[-p 65536] => "--port must be between 0 and 65535",
    %w[--head-timeout 100000] => "--head-timeout must be between 0 and 86400 seconds",
    %w[--max-head-size 100] => "--max-head-size must be between 256 and 1073741824"
  }.freeze

  USAGE_ERRORS.each do |argv, message|
    define_method("test_usage_error_#{argv.join("_").delete("-")}_is_one_line_and_status_1") do
      status, out = run_command(*argv, File.join(Conformance::APPS, "http.ru"))
      assert_equal 1, status.exitstatus, out
      assert_equal "#{runtime}: #{message}\nTry '#{runtime} --help'.\n", out
    end
  end

  def test_missing_config_ru_is_one_line_and_status_1
    status, out = run_command("-b", "127.0.0.1", "-p", "0", "nope/config.ru")
    assert_equal 1, status.exitstatus
    assert_equal "#{runtime}: nope/config.ru not found\n", out
  end

  # up_ruby's words are the reference: the bind as given to -b (tcp://) and the OS's message.
  def test_port_in_use_is_one_line_and_status_1
    taken = TCPServer.new("127.0.0.1", 0)
    port = taken.addr[1]
    status, out = run_command("-b", "127.0.0.1", "-p", port.to_s, "-w", "1", File.join(Conformance::APPS, "http.ru"))
    assert_equal 1, status.exitstatus, out
    assert_match(%r{\A#{runtime}: cannot listen on tcp://127\.0\.0\.1:#{port}: Address already in use\b.*\n\z}, out)
  ensure
    taken&.close
  end

  %w[TERM INT].each do |signal|
    define_method("test_#{signal.downcase}_stops_the_server_with_status_0") do
      server = start_own_server("http.ru")
      assert_equal 200, get("/").status
      server.signal(signal)
      assert server.wait(timeout: 15).success?, server.output
    end
  end
end
