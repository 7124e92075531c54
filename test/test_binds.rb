# frozen_string_literal: true

# Binds: -b may be given several times and takes a host (every address it resolves to), a
# tcp:// URL, a bracketed IPv6 address or a unix:// socket with its permissions; the server
# answers on each. Up::Bind parses, Up::Binder opens.
require_relative "helper"
require_relative "support/cli_process"
require "up/binder"
require "tmpdir"

class TestBinds < Minitest::Test
  include UpTestHelpers

  PARSED = [
    # spec                               port  unix?  host / path        port   mode
    ["localhost",                        3000, false, "localhost",       3000,  nil],
    ["0.0.0.0",                          80,   false, "0.0.0.0",         80,    nil],
    ["::1",                              3000, false, "::1",             3000,  nil],
    ["[::1]",                            3000, false, "::1",             3000,  nil],
    ["tcp://127.0.0.1:8080",             3000, false, "127.0.0.1",       8080,  nil],
    ["tcp://[::1]:8080",                 3000, false, "::1",             8080,  nil],
    ["tcp://example.com",                3000, false, "example.com",     3000,  nil],
    ["unix:///run/up.sock",              3000, true,  "/run/up.sock",    nil,   nil],
    ["unix://tmp/up.sock",               3000, true,  "tmp/up.sock",     nil,   nil],
    ["unix:///run/up.sock?mode=0660",    3000, true,  "/run/up.sock",    nil,   0o660],
    ["unix:///run/up.sock?mode=777",     3000, true,  "/run/up.sock",    nil,   0o777]
  ].freeze

  def test_binds_parse
    PARSED.each do |spec, port, unix, where, want_port, mode|
      bind = Up::Bind.parse(spec, port)
      assert_equal unix, bind.unix?, spec
      assert_equal where, unix ? bind.path : bind.host, spec
      assert_equal want_port, bind.port, spec unless unix
      mode.nil? ? assert_nil(bind.mode, spec) : assert_equal(mode, bind.mode, spec)
    end
  end

  def test_a_host_on_port_0_gets_one_port_for_all_its_addresses
    binder = Up::Binder.new([Up::Bind.parse("localhost", 0)]).bind
    ports = binder.sockets.map { |s| s.local_address.ip_port }.uniq
    assert_equal 1, ports.size, "ports #{ports}"
  ensure
    binder&.close
  end

  def test_a_stale_socket_file_is_replaced_and_a_live_one_refused
    Dir.mktmpdir do |dir|
      path = File.join(dir, "up.sock")
      dead = Socket.new(:UNIX, :STREAM)
      dead.bind(Addrinfo.unix(path)) # a socket file nobody listens on, as a killed server leaves
      dead.close
      binder = Up::Binder.new([Up::Bind.parse("unix://#{path}?mode=0600", 0)]).bind
      assert_equal 0o600, File.stat(path).mode & 0o777
      error = assert_raises(Up::Binder::Error) { Up::Binder.new([Up::Bind.parse("unix://#{path}", 0)]).bind }
      assert_includes error.message, "a server is listening on it already"
      binder.close
      refute File.exist?(path), "the socket file is removed on close"
    end
  end

  def test_the_cli_serves_on_several_binds_of_every_kind
    Dir.mktmpdir do |dir|
      sock_path = File.join(dir, "up.sock")
      server = CLIProcess.new("-b", "127.0.0.1", "-b", "[::1]", "-b", "unix://#{sock_path}?mode=0660",
                              "-p", "0", "-w", "1", "test/rackup/hello.ru", wait: false)
      line = server.wait_for(/listening on (.*) \(pid/)[1]
      urls = line.split(", ")
      port = urls.first[/:(\d+)\z/, 1].to_i
      assert_equal ["http://127.0.0.1:#{port}", "http://[::1]:#{port}", "unix://#{sock_path}"], urls
      assert_equal "Hello World", get("/", port: port).body
      v6 = Socket.tcp("::1", port)
      (@sockets ||= []) << v6
      v6.write("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
      assert_equal "Hello World", read_response(v6).body
      unix = Socket.unix(sock_path)
      (@sockets ||= []) << unix
      unix.write("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
      assert_equal "Hello World", read_response(unix).body
      assert_equal 0o660, File.stat(sock_path).mode & 0o777
      server.stop
      refute File.exist?(sock_path), "the socket file is removed when the server stops"
    ensure
      server&.stop
    end
  end

  def test_a_bind_that_cannot_be_opened_is_a_clear_error
    Dir.mktmpdir do |dir|
      server = CLIProcess.new("-b", "unix://#{dir}/missing/up.sock", "-p", "0", "-w", "1", "test/rackup/hello.ru", wait: false)
      status = server.wait(timeout: 20)
      assert_equal 1, status.exitstatus
      assert_match %r{\Aup_ruby: cannot listen on unix://#{dir}/missing/up\.sock: No such file or directory}, server.output
    end
  end
end
