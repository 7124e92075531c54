# frozen_string_literal: true

# Request bodies: a 50 MB upload spooled to a temp file, concurrent uploads that must not mix,
# rack.input behaving like Ruby's IO (read, read(n), read(n, buf), gets, each, rewind), and a
# declared length that costs no memory before its bytes come (checked on exe/up_ruby, so a
# server that dies of it fails the test rather than the run).
require_relative "helper"
require_relative "support/cli_process"
require "digest"

class TestUploads < Minitest::Test
  include UpTestHelpers

  def teardown
    super
    (@processes || []).each(&:stop)
  end

  DIGEST = lambda do |env|
    input = env["rack.input"]
    digest = Digest::SHA256.new
    while (chunk = input.read(65_536))
      digest << chunk
    end
    [200, {}, ["#{digest.hexdigest} #{env["CONTENT_LENGTH"]}"]]
  end

  def upload(sock, body, chunked: false)
    if chunked
      sock.write("POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
      body.bytes.each_slice(100_003) { |s| sock.write("#{s.size.to_s(16)}\r\n#{s.pack("C*")}\r\n") }
      sock.write("0\r\n\r\n")
    else
      sock.write("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: #{body.bytesize}\r\n\r\n")
      sock.write(body)
    end
  end

  def test_fifty_megabyte_upload_is_received_whole
    start_server(DIGEST, spool_threshold: 1024 * 1024)
    body = Random.new(1).bytes(50 * 1024 * 1024)
    sock = connect
    writer = Thread.new { upload(sock, body) }
    res = read_response(sock)
    writer.join
    assert_equal "#{Digest::SHA256.hexdigest(body)} #{body.bytesize}", res.body
  end

  def test_chunked_upload_over_spool_threshold
    start_server(DIGEST, spool_threshold: 64 * 1024)
    body = Random.new(2).bytes(3 * 1024 * 1024 + 17)
    sock = connect
    writer = Thread.new { upload(sock, body, chunked: true) }
    res = read_response(sock)
    writer.join
    assert_equal "#{Digest::SHA256.hexdigest(body)} #{body.bytesize}", res.body
  end

  def test_concurrent_uploads_do_not_mix
    server = start_server(DIGEST, spool_threshold: 256 * 1024, threads: 4)
    bodies = Array.new(8) { |i| Random.new(10 + i).bytes(200_000 * (i + 1)) }
    socks = bodies.map { connect }
    writers = socks.zip(bodies).each_with_index.map do |(sock, body), i|
      Thread.new { upload(sock, body, chunked: i.odd?) }
    end
    socks.zip(bodies).each_with_index do |(sock, body), i|
      assert_equal "#{Digest::SHA256.hexdigest(body)} #{body.bytesize}", read_response(sock).body,
                   "upload #{i}; the server's log:\n#{server.log_text}"
    end
    writers.each(&:join)
  end

  def test_rack_input_reads_like_io
    results = nil
    start_server(lambda { |env|
      input = env["rack.input"]
      results = []
      results << input.gets << input.read(3) << input.read(0)
      buf = +"old"
      results << input.read(4, buf) << buf.dup
      results << input.read << input.read << input.read(1)
      input.rewind
      results << input.each.to_a
      input.rewind
      results << input.read(nil).encoding.to_s
      [200, {}, ["ok"]]
    }, spool_threshold: 8)
    body = "line1\nabcdefgh\nlast"
    res = raw_request("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: #{body.bytesize}\r\nConnection: close\r\n\r\n#{body}")
    assert_equal "ok", res.body
    assert_equal ["line1\n", "abc", "", "defg", "defg", "h\nlast", "", nil,
                  ["line1\n", "abcdefgh\n", "last"], "ASCII-8BIT"], results
  end

  # read(n) allocates for what is left of the body, not for n: an n far past the body (an
  # app that trusts a client's number) reads the body, not a NoMemoryError.
  def test_rack_input_read_with_a_huge_length_reads_what_there_is
    results = nil
    start_server(lambda { |env|
      input = env["rack.input"]
      results = [input.read(2**62), input.read(2**62)]
      input.rewind
      buf = +""
      results << input.read(2**62, buf) << buf.bytesize
      [200, {}, ["ok"]]
    })
    res = raw_request("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
    assert_equal "ok", res.body, res.raw
    assert_equal ["hello", nil, "hello", 5], results
  end

  # The body cannot be stored: a 500 that says so, a line in the log (written from the loop
  # thread, which runs without the GVL when there are app threads), and the app never called.
  def test_body_that_cannot_be_spooled_is_a_500_and_logged
    [0, 2].each do |threads|
      called = false
      server = start_server(->(_) { called = true; [200, {}, ["ok"]] },
                            threads: threads, spool_threshold: 16, tmp_dir: "/nonexistent/up-test")
      body = "x" * (1024 * 1024) # more than one read: stored, not borrowed from the read buffer
      res = raw_request("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: #{body.bytesize}\r\n\r\n#{body}")
      assert_equal 500, res.status, "threads #{threads}"
      assert_includes res.body, "could not be stored"
      # The engine's log lines are written by the server's main thread, a moment after the
      # loop queued them: the 500 may come first.
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 5
      Thread.pass until server.log_text.include?("cannot spool") || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      assert_includes server.log_text, "cannot spool a request body to a temporary file"
      refute called, "threads #{threads}: the app ran without its body"
      assert_equal "ok", get.body, "threads #{threads}: still serving"
    end
  end

  # Content-Length: 2^62 and one byte, with --max-body-size 0 ("no limit"): the body buffer
  # must not be sized from what the client declared, or the allocation aborts the process.
  def test_huge_declared_body_without_a_limit_does_not_kill_the_server
    server = start_cli("--max-body-size", "0")
    sock = connect(server.port)
    sock.write("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4611686018427387904\r\n\r\nx")
    assert_equal "Hello World", get(port: server.port).body, server.output
    assert_equal "Hello World", get(port: server.port).body, server.output
    server.read_available
    refute_match(/fatal/, server.output)
  end

  # 100 connections declare 1e9-byte bodies (under the default 1 GiB limit) and send one byte:
  # the worker's address space grows with the bytes that came, not with what was declared
  # (sized from the declared length it grew by about 100 GB), and each connection still ends
  # properly: 408 once its body stalls.
  def test_declared_bodies_reserve_no_memory_before_their_bytes_come
    server = start_cli("--body-timeout", "2")
    3.times { assert_equal "Hello World", get(port: server.port).body }
    before = vm_size_kb(server.pid)
    socks = Array.new(100) do
      sock = connect(server.port)
      sock.write("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000000\r\n\r\nx")
      sock
    end
    # Accepted and read in order, so once a later connection is answered the 100 were read.
    assert_equal "Hello World", get(port: server.port).body
    grown_mb = (vm_size_kb(server.pid) - before) / 1024
    assert_operator grown_mb, :<, 512, "VmSize grew by #{grown_mb} MB for 100 one-byte bodies"
    socks.each_with_index do |sock, i|
      res = read_response(sock)
      assert_equal 408, res&.status, "connection #{i}"
      assert closed_by_server?(sock), "connection #{i}"
    end
    assert_equal "Hello World", get(port: server.port).body
  end

  def test_input_without_body_is_empty
    start_server(->(env) { [200, {}, [env["rack.input"].read.inspect, env["rack.input"].gets.inspect]] })
    assert_equal '""nil', get.body
  end

  private

  # exe/up_ruby as one process (-w 1: the server is that pid) on hello.ru, stopped in teardown.
  def start_cli(*args)
    process = CLIProcess.new("-w", "1", "-b", "127.0.0.1", "-p", "0", *args, "test/rackup/hello.ru")
    (@processes ||= []) << process
    process
  end

  def vm_size_kb(pid)
    File.read("/proc/#{pid}/status")[/^VmSize:\s+(\d+) kB/, 1].to_i
  end
end
