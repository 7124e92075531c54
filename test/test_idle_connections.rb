# frozen_string_literal: true

# 10,000 idle keep-alive connections must cost the worker at most 8 MB: an idle connection
# holds no buffer and no request state, only its small struct (under 512 bytes) and the kernel's
# socket; the rest is buffers the pool keeps for reuse. bench/idle_memory shows the same
# figure next to nginx's.
require_relative "helper"
require_relative "support/cli_process"

class TestIdleConnections < Minitest::Test
  include UpTestHelpers

  COUNT = 10_000

  def rss_kb(pid)
    File.read("/proc/#{pid}/status")[/VmRSS:\s+(\d+)/, 1].to_i
  end

  def test_ten_thousand_idle_keep_alive_connections_cost_at_most_8_mb
    _soft, hard = Process.getrlimit(:NOFILE)
    if hard < COUNT + 200
      begin
        Process.setrlimit(:NOFILE, COUNT + 200, COUNT + 200) # root may raise its hard limit
        hard = COUNT + 200
      rescue Errno::EPERM
        nil # not allowed here: the assertion below says what is missing
      end
    end
    assert_operator hard, :>=, COUNT + 200, "the hard file limit (#{hard}) is too low for this test"
    Process.setrlimit(:NOFILE, hard)
    server = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", "-t", "0", "test/rackup/hello.ru")
    # Warm up, so the Ruby heap is at its working size before measuring: the garbage of the
    # 10,000 requests below must find the pages it needs already there (after 200 requests
    # the heap still grew by 3 MB of pages while holding no more live objects).
    sock = connect(server.port)
    20_000.times do
      sock.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
      read_response(sock)
    end
    before = rss_kb(server.pid)
    socks = []
    (COUNT / 100).times do
      batch = Array.new(100) { TCPSocket.new("127.0.0.1", server.port) }
      batch.each { |s| s.write("GET / HTTP/1.1\r\nHost: h\r\n\r\n") }
      batch.each { |s| assert_equal 200, read_response(s).status }
      socks.concat(batch)
    end
    grown_mb = (rss_kb(server.pid) - before) / 1024.0
    warn "#{COUNT} idle connections: +#{grown_mb.round(1)} MB RSS" if ENV["VERBOSE"]
    assert_operator grown_mb, :<=, 8, "#{COUNT} idle connections cost #{grown_mb.round(1)} MB"
    # Still serving while holding them all.
    assert_equal 200, get("/", port: server.port).status
  ensure
    socks&.each(&:close)
    server&.stop
  end
end
