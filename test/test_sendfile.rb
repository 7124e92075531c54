# frozen_string_literal: true

# An app's file responses sent by the engine (engine/handlers/file_response.c, ruby/body.c): the env says
# "sendfile.type" => "x-sendfile", so Rack::Sendfile answers a File body with an x-sendfile
# field, and a body with to_path and no Rack::Sendfile (Rack::Files) is sent from its path too.
# Over real sockets with curl and raw requests: whole files compared byte for byte, ranges
# (RFC 9110 §14), conditional requests (§13), HEAD, the app's own status and content-type, a
# missing file, a file that shrinks while it is sent, close on every body, and a download that
# does not grow the Ruby process (the file never passes through Ruby).
require_relative "helper"
require "fileutils"
require "open3"
require "rack/builder"
require "rack/files"
require "rack/sendfile"
require "time"
require "tmpdir"

class TestSendfile < Minitest::Test
  include UpTestHelpers

  # A File body that says when it was closed, and fails the test if its bytes are ever read
  # through Ruby.
  class FileBody
    def initialize(path, closed)
      @path = path
      @closed = closed
    end

    def to_path
      @path
    end

    def each
      raise "the body was read through Ruby"
    end

    def close
      @closed << @path
    end
  end

  def setup
    @dir = Dir.mktmpdir("up-sendfile")
    write("hello.txt", "hello world\n")
    @big = Random.new(7).bytes(8 * 1024 * 1024 + 123)
    write("big.bin", @big)
    @closed = Queue.new
  end

  def teardown
    super
    FileUtils.rm_rf(@dir)
  end

  def write(name, data)
    File.binwrite(File.join(@dir, name), data)
  end

  def path(name)
    File.join(@dir, name)
  end

  # /sendfile/NAME: Rack::Sendfile over a FileBody (the x-sendfile route); /to_path/NAME: the
  # FileBody alone; /files/NAME: Rack::Files; /status/CODE/NAME: the app's own status; the
  # content-type is the app's.
  def app
    dir = @dir
    closed = @closed
    file_app = lambda do |env|
      name = env["PATH_INFO"].delete_prefix("/")
      [200, { "content-type" => "application/x-up-test" }, FileBody.new(File.join(dir, name), closed)]
    end
    Rack::Builder.new do
      map("/sendfile") do
        use Rack::Sendfile
        run file_app
      end
      map("/to_path") { run file_app }
      map("/files") { run Rack::Files.new(dir) }
      map("/status") do
        run(lambda do |env|
          code, name = env["PATH_INFO"].delete_prefix("/").split("/", 2)
          [Integer(code), { "content-type" => "text/plain" }, FileBody.new(File.join(dir, name), closed)]
        end)
      end
      map("/named") do
        run ->(env) { [200, { "x-sendfile" => env["QUERY_STRING"] }, []] }
      end
      map("/rack2") do
        run ->(env) { [Integer(env["PATH_INFO"].delete_prefix("/")), { "X-SendFile" => env["QUERY_STRING"] }, []] }
      end
      map("/env") { run ->(env) { [200, {}, [env["sendfile.type"].to_s]] } }
    end.to_app
  end

  def serve(**options)
    @server = start_server(app, **options)
  end

  def url(p)
    "http://127.0.0.1:#{@port}#{p}"
  end

  def curl(*args)
    out, err, status = Open3.capture3("curl", "-sS", "--max-time", "20", *args, binmode: true)
    assert status.success?, "curl #{args.join(" ")} failed: #{err}"
    out
  end

  def assert_closed(name)
    assert_equal path(name), Timeout.timeout(5) { @closed.pop }
  end

  def test_env_says_the_engine_sends_files
    serve
    assert_equal "x-sendfile", get("/env").body
  end

  def test_rack_sendfile_file_body_is_sent_by_the_engine_with_validators
    serve
    res = get("/sendfile/hello.txt")
    assert_equal [200, "hello world\n"], [res.status, res.body]
    assert_equal "application/x-up-test", res["content-type"], "the app's content-type wins"
    assert_equal "12", res["content-length"]
    assert_equal "bytes", res["accept-ranges"]
    assert_match(/\A"[0-9a-f.]+-c"\z/, res["etag"])
    assert_equal File.mtime(path("hello.txt")).httpdate, res["last-modified"]
    assert_nil res["x-sendfile"], "the file's path is not sent to the client"
    assert_closed("hello.txt")
  end

  def test_a_large_file_is_downloaded_whole_through_each_route
    serve
    %w[sendfile to_path files].each do |route|
      out = File.join(@dir, "#{route}.out")
      curl("-o", out, url("/#{route}/big.bin"))
      assert File.binread(out) == @big, "#{route}: the download differs from the file"
    end
    assert_closed("big.bin")
    assert_closed("big.bin")
  end

  def test_ranges_single_suffix_open_resumed_and_unsatisfiable
    serve
    %w[sendfile to_path].each do |route|
      u = url("/#{route}/big.bin")
      assert_equal @big[1000, 24], curl("-r", "1000-1023", u), route
      assert_equal @big[-10..], curl("-r", "-10", u), route
      assert_equal @big[8_000_000..], curl("-r", "8000000-", u), route
      # A download cut short and resumed (curl -C -): bytes=N- (RFC 9110 §14.1.2).
      out = File.join(@dir, "resumed.out")
      File.binwrite(out, @big[0, 100_000])
      head = curl("-C", "-", "-D", "-", "-o", out, u)
      assert_match(%r{^content-range: bytes 100000-#{@big.bytesize - 1}/#{@big.bytesize}\r$}, head)
      assert File.binread(out) == @big, "#{route}: the resumed download differs"
      res = get("/#{route}/hello.txt", headers: { "Range" => "bytes=12-" })
      assert_equal [416, "bytes */12", ""], [res.status, res["content-range"], res.body]
    end
  end

  def test_several_ranges_come_as_multipart_byteranges_with_the_apps_type
    serve
    res = get("/sendfile/hello.txt", headers: { "Range" => "bytes=0-4,-6" })
    assert_equal 206, res.status
    boundary = res["content-type"][%r{\Amultipart/byteranges; boundary=(\S+)\z}, 1] or flunk res["content-type"]
    parts = res.body.split("--#{boundary}")
    assert_equal ["\r\n", "--\r\n"], [parts.first, parts.last]
    assert_equal ["hello", "world\n"], parts[1..-2].map { |p| p.split("\r\n\r\n", 2).last.chomp("\r\n") }
    assert_includes parts[1], "content-type: application/x-up-test"
    assert_includes parts[2], "content-range: bytes 6-11/12"
    assert_equal res.body.bytesize, Integer(res["content-length"])
  end

  def test_conditional_requests_get_304_and_if_range_decides_the_range
    hour_ago = Time.now - 3600
    File.utime(hour_ago, hour_ago, path("hello.txt"))
    serve
    etag = get("/sendfile/hello.txt")["etag"]
    res = get("/sendfile/hello.txt", headers: { "If-None-Match" => etag })
    assert_equal [304, "", etag, nil], [res.status, res.body, res["etag"], res["content-type"]]
    res = get("/to_path/hello.txt", headers: { "If-Modified-Since" => hour_ago.httpdate })
    assert_equal 304, res.status
    res = get("/sendfile/hello.txt", headers: { "If-Modified-Since" => (hour_ago - 60).httpdate })
    assert_equal [200, "hello world\n"], [res.status, res.body]
    res = get("/sendfile/hello.txt", headers: { "If-Match" => '"other"' })
    assert_equal [412, "Precondition Failed\n", "text/plain; charset=utf-8"], [res.status, res.body, res["content-type"]]
    # curl's own conditional download: --etag-compare sends If-None-Match.
    etags = File.join(@dir, "etags")
    curl("--etag-save", etags, "-o", File::NULL, url("/sendfile/hello.txt"))
    code = curl("--etag-compare", etags, "-o", File::NULL, "-w", "%{http_code}", url("/sendfile/hello.txt"))
    assert_equal "304", code
    # If-Range (§13.1.5): the range only while the validator matches, else the whole file.
    ranged = get("/sendfile/hello.txt", headers: { "Range" => "bytes=0-4", "If-Range" => etag })
    assert_equal [206, "hello"], [ranged.status, ranged.body]
    stale = get("/sendfile/hello.txt", headers: { "Range" => "bytes=0-4", "If-Range" => '"0.0-c"' })
    assert_equal [200, "hello world\n"], [stale.status, stale.body]
    by_date = get("/sendfile/hello.txt", headers: { "Range" => "bytes=6-", "If-Range" => hour_ago.httpdate })
    assert_equal [206, "world\n"], [by_date.status, by_date.body]
  end

  # Rack::Files gives its own last-modified: it is the validator, and no second one is sent.
  def test_rack_files_last_modified_is_kept_and_used
    hour_ago = Time.now - 3600
    File.utime(hour_ago, hour_ago, path("hello.txt"))
    serve
    res = get("/files/hello.txt")
    assert_equal [200, "hello world\n", [hour_ago.httpdate]], [res.status, res.body, res.headers["last-modified"]]
    assert_equal "bytes", res["accept-ranges"]
    res = get("/files/hello.txt", headers: { "If-None-Match" => res["etag"] })
    assert_equal 304, res.status
  end

  def test_head_gets_the_length_and_no_body
    serve
    head = curl("-I", url("/sendfile/big.bin"))
    assert_match(/^HTTP\/1.1 200 /, head)
    assert_match(/^content-length: #{@big.bytesize}\r$/, head)
    assert_match(/^content-type: application\/x-up-test\r$/, head)
    sock = connect
    sock.write("HEAD /to_path/hello.txt HTTP/1.1\r\nHost: x\r\n\r\nGET /to_path/hello.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    res = read_response(sock, head: true)
    assert_equal [200, "12"], [res.status, res["content-length"]]
    assert_equal "hello world\n", read_response(sock).body, "the keep-alive connection goes on after HEAD"
  end

  # A status other than 200 is the app's answer: sent as it is, whole, without ranges.
  def test_the_apps_own_status_disables_ranges
    serve
    res = get("/status/404/hello.txt", headers: { "Range" => "bytes=0-4" })
    assert_equal [404, "hello world\n", "text/plain", nil], [res.status, res.body, res["content-type"], res["content-range"]]
    assert_nil res["accept-ranges"]
    assert_closed("hello.txt")
  end

  # A Rack 2 app spells the field as it likes; field names are case-insensitive (RFC 9110
  # §5.1), and the path must not reach the client whatever the spelling.
  def test_x_sendfile_in_another_case_is_the_file
    serve
    res = get("/rack2/200?#{path("hello.txt")}")
    assert_equal [200, "hello world\n", nil], [res.status, res.body, res["x-sendfile"]]
    assert_equal "12", res["content-length"]
    res = get("/rack2/200?#{path("hello.txt")}", headers: { "Range" => "bytes=6-" })
    assert_equal [206, "world\n"], [res.status, res.body]
    res = get("/rack2/204?#{path("hello.txt")}")
    assert_equal [204, nil], [res.status, res["x-sendfile"]]
    refute_includes res.raw, @dir
    assert_equal 404, get("/rack2/200?#{path("nope.txt")}").status
  end

  def test_a_missing_file_is_404_and_logged_and_the_server_goes_on
    server = serve
    res = get("/named?#{path("nope.txt")}")
    assert_equal 404, res.status
    assert_includes server.log_text, "x-sendfile \"#{path("nope.txt")}\": No such file or directory"
    res = get("/named?#{@dir}")
    assert_equal 500, res.status, "a directory is no file to send"
    res = get("/to_path/nope.txt")
    assert_equal 500, res.status, "a to_path that names no file falls back to each, which raises here"
    assert_equal "hello world\n", get("/sendfile/hello.txt").body
  end

  # The file is sent at the size it had when opened; one that shrinks meanwhile ends the
  # connection (its content-length cannot be kept) instead of holding it open.
  def test_a_file_that_shrinks_while_sent_closes_the_connection
    write("shrinks.bin", Random.new(3).bytes(64 * 1024 * 1024))
    serve
    sock = connect
    sock.write("GET /sendfile/shrinks.bin HTTP/1.1\r\nHost: x\r\n\r\n")
    head = +""
    head << sock.readpartial(4096) until head.include?("\r\n\r\n")
    File.truncate(path("shrinks.bin"), 1024)
    got = head.bytesize - head.index("\r\n\r\n") - 4
    Timeout.timeout(10) do
      loop { got += sock.readpartial(1 << 20).bytesize }
    rescue EOFError, Errno::ECONNRESET
      nil
    end
    assert_operator got, :<, 64 * 1024 * 1024
  end

  # The engine sends the file by sendfile: the Ruby process (the server runs in it) does not grow
  # by the file's size, and the body's each is never called (FileBody raises if it is).
  def test_a_download_does_not_grow_the_ruby_process
    size = 64 * 1024 * 1024
    write("huge.bin", "\0".b * size)
    serve
    curl("-o", File::NULL, url("/sendfile/hello.txt"))
    before = rss
    out = curl("-o", File::NULL, "-w", "%{size_download}", url("/sendfile/huge.bin"))
    assert_equal size.to_s, out
    out = curl("-o", File::NULL, "-w", "%{size_download}", url("/to_path/huge.bin"))
    assert_equal size.to_s, out
    grown = rss - before
    assert_operator grown, :<, size / 8, "the process grew by #{grown} bytes"
  end

  def rss
    File.read("/proc/self/status")[/^VmRSS:\s+(\d+) kB/, 1].to_i * 1024
  end
end
