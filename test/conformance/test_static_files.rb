# frozen_string_literal: true

# Static files answered before the app, the same on every runtime: ranges (single,
# suffix, open, several as multipart/byteranges, 416), conditional requests (304, 412, If-Range
# both ways round), precompressed variants by Accept-Encoding with vary, index.html and the 301
# to the slash form, immutable fingerprinted assets, the engine's etag format (so a file has one
# etag whichever runtime sends it), a traversal corpus with a secret planted beside the root,
# dotfiles and listings only when asked, --static groups, --static-only and a static.json site.
# RFC 9110 sections are cited where a check is about one of its rules.
require_relative "helper"
require_relative "../support/static_traversals"
require "json"
require "time"
require "zlib"

class TestConformanceStaticFiles < ConformanceTest
  SECRET = "SECRET-#{Process.pid}"
  DIR = Dir.mktmpdir("up-conformance-static")
  ROOT = File.join(DIR, "public")
  BIG = Random.new(42).bytes(300_000)
  CSS = "body { color: #333 }\n" * 200
  GZ = Zlib.gzip(CSS) # once: the gzip header holds the time it was made
  Minitest.after_run { FileUtils.rm_rf(DIR) }

  def self.write(rel, data)
    path = File.join(DIR, rel)
    FileUtils.mkdir_p(File.dirname(path))
    File.binwrite(path, data)
    path
  end

  write("secret.txt", "#{SECRET}\n")
  # An hour old: a date validator is strong only a second after the file changed (§13.1.5).
  hour_ago = Time.now - 3600
  File.utime(hour_ago, hour_ago, write("public/hello.txt", "hello world\n"))
  write("public/index.html", "<h1>home</h1>\n")
  write("public/docs/index.html", "<h1>docs</h1>\n")
  write("public/big.bin", BIG)
  write("public/app.css", CSS)
  write("public/app.css.gz", GZ)
  write("public/app.css.br", "BR-BYTES")
  write("public/app.css.zst", "ZSTD-BYTES")
  write("public/assets/app-0123abcd.js", "console.log(1)\n")
  write("public/assets/jquery-3.js", "jquery\n")
  write("public/.env", "#{SECRET}\n")
  write("public/list/<b>&.txt", "x")
  write("public/list/sub/x.txt", "x")
  File.symlink("../secret.txt", File.join(ROOT, "out"))
  File.symlink("hello.txt", File.join(ROOT, "inside"))

  serve "static.ru", "--public", ROOT

  def teardown
    super
    (@static_only || []).each(&:stop)
  end

  def head(path, headers: {})
    lines = headers.map { |k, v| "#{k}: #{v}\r\n" }.join
    raw_request("HEAD #{path} HTTP/1.1\r\nHost: localhost\r\n#{lines}Connection: close\r\n\r\n", head: true)
  end

  # The etag up_ruby's engine gives a file (ext/up/engine/handlers/file_cache.c): its mtime's seconds and
  # nanoseconds and its size, in hex, and "-CODING" for a precompressed variant.
  def engine_etag(rel, coding = nil)
    stat = File.stat(File.join(ROOT, rel))
    format('"%x.%x-%x%s"', stat.mtime.to_i, stat.mtime.nsec, stat.size, coding ? "-#{coding}" : "")
  end

  def test_a_file_has_the_engines_etag_and_last_modified
    res = get("/hello.txt")
    assert_equal [200, "hello world\n"], [res.status, res.body]
    assert_equal ["text/plain; charset=utf-8", "bytes", "12"], [res["content-type"], res["accept-ranges"], res["content-length"]]
    assert_equal engine_etag("hello.txt"), res["etag"]
    assert_equal File.mtime(File.join(ROOT, "hello.txt")).httpdate, res["last-modified"]
    assert_nil res["vary"]
  end

  def test_head_has_the_length_and_no_body
    res = head("/big.bin")
    assert_equal [200, "300000", "application/octet-stream"], [res.status, res["content-length"], res["content-type"]]
    assert_equal engine_etag("big.bin"), res["etag"]
    assert_equal "", res.body.to_s
  end

  # RFC 9110 §14.1.2: single, open and suffix ranges; the 206 names the range it carries.
  def test_single_open_and_suffix_ranges
    {
      "bytes=1000-1023" => [1000, 1023], "bytes=100000-" => [100_000, 299_999], "bytes=-10" => [299_990, 299_999],
      "bytes=299990-400000" => [299_990, 299_999], "bytes=-400000" => [0, 299_999]
    }.each do |range, (first, last)|
      res = get("/big.bin", headers: { "Range" => range })
      assert_equal [206, "bytes #{first}-#{last}/300000"], [res.status, res["content-range"]], range
      assert_equal BIG[first..last], res.body, range
      assert_equal (last - first + 1).to_s, res["content-length"], range
    end
  end

  # Malformed, overlapping or too many ranges are no range at all: the whole file, a 200.
  def test_a_range_that_cannot_be_read_is_ignored
    ["bytes=5-1", "bytes=a-", "items=0-1", "bytes=-", "bytes=0-1,1-2", "bytes=#{(0..16).map { |i| "#{i * 2}-#{i * 2}" }.join(",")}"].each do |range|
      res = get("/hello.txt", headers: { "Range" => range })
      assert_equal [200, "hello world\n", nil], [res.status, res.body, res["content-range"]], range
    end
  end

  def test_several_ranges_come_as_multipart_byteranges
    res = get("/hello.txt", headers: { "Range" => "bytes=0-4,-6" })
    assert_equal 206, res.status
    boundary = res["content-type"][%r{\Amultipart/byteranges; boundary=(\S+)\z}, 1] or flunk res["content-type"]
    parts = res.body.split("--#{boundary}")
    assert_equal ["\r\n", "--\r\n"], [parts.first, parts.last]
    assert_equal ["hello", "world\n"], parts[1..-2].map { |p| p.split("\r\n\r\n", 2).last.chomp("\r\n") }
    assert_includes parts[1], "content-type: text/plain; charset=utf-8\r\ncontent-range: bytes 0-4/12"
    assert_includes parts[2], "content-range: bytes 6-11/12"
    assert_equal res.body.bytesize, Integer(res["content-length"])
    assert_equal engine_etag("hello.txt"), res["etag"]
  end

  def test_unsatisfiable_range_is_416_with_the_size
    ["bytes=12-", "bytes=20-30,40-", "bytes=-0"].each do |range|
      res = get("/hello.txt", headers: { "Range" => range })
      assert_equal [416, "bytes */12", "0"], [res.status, res["content-range"], res["content-length"]], range
    end
  end

  # RFC 9110 §13.2.2: If-None-Match (weak comparison, any tag of the list) before
  # If-Modified-Since; If-Match (strong) fails with a 412.
  def test_conditional_requests
    etag = engine_etag("hello.txt")
    modified = File.mtime(File.join(ROOT, "hello.txt"))
    not_modified = [
      { "If-None-Match" => etag }, { "If-None-Match" => "\"x\", W/#{etag}" }, { "If-None-Match" => "*" },
      { "If-Modified-Since" => modified.httpdate }, { "If-Modified-Since" => (modified + 60).httpdate }
    ]
    not_modified.each do |fields|
      res = get("/hello.txt", headers: fields)
      assert_equal [304, "", etag, nil], [res.status, res.body.to_s, res["etag"], res["content-length"]], fields.inspect
    end
    sent = [{ "If-None-Match" => '"other"' }, { "If-Modified-Since" => (modified - 60).httpdate },
            { "If-None-Match" => '"other"', "If-Modified-Since" => modified.httpdate }, { "If-Match" => etag }]
    sent.each { |fields| assert_equal 200, get("/hello.txt", headers: fields).status, fields.inspect }
    assert_equal 412, get("/hello.txt", headers: { "If-Match" => '"other"' }).status
    assert_equal 412, get("/hello.txt", headers: { "If-Unmodified-Since" => (modified - 60).httpdate }).status
  end

  # RFC 9110 §13.1.5: the range only while the validator matches, the whole file otherwise; a
  # date must be the exact one.
  def test_if_range_honours_the_range_only_when_the_validator_matches
    etag = engine_etag("hello.txt")
    date = File.mtime(File.join(ROOT, "hello.txt")).httpdate
    later = (File.mtime(File.join(ROOT, "hello.txt")) + 60).httpdate
    {
      etag => [206, "hello"], '"0.0-c"' => [200, "hello world\n"], "W/#{etag}" => [200, "hello world\n"],
      date => [206, "hello"], later => [200, "hello world\n"], "Thu, 01 Jan 1970 00:00:00 GMT" => [200, "hello world\n"]
    }.each do |if_range, expected|
      res = get("/hello.txt", headers: { "Range" => "bytes=0-4", "If-Range" => if_range })
      assert_equal expected, [res.status, res.body], if_range
    end
  end

  # Accept-Encoding's q-values choose among .br, .zst and .gz (§12.5.3), with vary on every
  # answer for the file (§12.5.5); a range applies to the variant sent, whose etag is its own.
  def test_accept_encoding_q_values_choose_the_precompressed_variant_with_vary
    {
      "gzip, deflate, br, zstd" => ["br", "BR-BYTES"],
      "gzip;q=1.0, br;q=0.5, zstd;q=0.9" => ["gzip", GZ],
      "br;q=0.2, zstd" => ["zstd", "ZSTD-BYTES"],
      "*;q=0.5, br;q=0" => ["zstd", "ZSTD-BYTES"],
      "br;q=0, zstd;q=0, gzip;q=0" => [nil, CSS],
      "identity;q=1, gzip;q=0.5" => [nil, CSS],
      "deflate, compress" => [nil, CSS],
      "BR;Q=1" => ["br", "BR-BYTES"]
    }.each do |accept, (coding, body)|
      res = get("/app.css", headers: { "Accept-Encoding" => accept })
      assert_equal [200, coding, "accept-encoding"], [res.status, res["content-encoding"], res["vary"]], accept
      assert_equal "text/css; charset=utf-8", res["content-type"], accept
      assert_equal body, res.body, accept
      suffix = { "br" => ".br", "zstd" => ".zst", "gzip" => ".gz" }[coding]
      assert_equal engine_etag("app.css#{suffix}", coding), res["etag"], accept if coding
    end
    identity = get("/app.css")
    assert_equal [CSS, "accept-encoding", nil, engine_etag("app.css")], [identity.body, identity["vary"], identity["content-encoding"], identity["etag"]]
    br = get("/app.css", headers: { "Accept-Encoding" => "br", "Range" => "bytes=0-1" })
    assert_equal [206, "BR", "bytes 0-1/8", "br"], [br.status, br.body, br["content-range"], br["content-encoding"]]
    # Several ranges of a variant: the whole variant (a part cannot name its coding).
    several = get("/app.css", headers: { "Accept-Encoding" => "br", "Range" => "bytes=0-1,3-4" })
    assert_equal [200, "BR-BYTES"], [several.status, several.body]
  end

  def test_directories_redirect_to_their_slash_and_serve_index_html
    res = get("/docs?x=1")
    assert_equal [301, "/docs/?x=1"], [res.status, res["location"]]
    docs = get("/docs/")
    assert_equal [200, "<h1>docs</h1>\n", "text/html; charset=utf-8"], [docs.status, docs.body, docs["content-type"]]
    assert_equal "<h1>home</h1>\n", get("/").body
    assert_equal "app: GET /hello.txt/", get("/hello.txt/").body # a file is no directory
  end

  def test_fingerprinted_assets_are_immutable
    res = get("/assets/app-0123abcd.js")
    assert_equal ["public, max-age=31536000, immutable", "text/javascript; charset=utf-8"], [res["cache-control"], res["content-type"]]
    assert_nil get("/assets/jquery-3.js")["cache-control"] # too few hex digits for a digest
    assert_nil get("/hello.txt")["cache-control"]
  end

  def test_traversal_attempts_never_return_a_byte_from_outside_the_root
    StaticTraversals::TARGETS.each { |target| assert_traversal_refused(target) }
  end

  # A 404 or 400 for target, and not a byte of the secret; over HTTP/2 a stream reset (a
  # :path the HTTP/2 layer refuses as malformed, RFC 9113 §8.3.1) refuses it too.
  def assert_traversal_refused(target)
    sock = connect
    sock.write("GET #{target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    res = read_response(sock)
    return if res.nil? && http2?

    bytes = http2? ? res.raw : res.raw + sock.read.to_s
    refute_includes bytes, SECRET, "#{target} leaked the secret"
    assert_includes [404, 400], res.status, target
  end

  # A symlink is followed while it stays beneath the root.
  def test_a_symlink_inside_the_root_is_served
    assert_equal "hello world\n", get("/inside").body
  end

  def test_misses_and_other_methods_go_to_the_app
    assert_equal "app: GET /posts/1", get("/posts/1").body
    post = raw_request("POST /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nab")
    assert_equal "app: POST /hello.txt", post.body
    assert_equal "app: GET /.env", get("/.env").body
    assert_equal "app: GET /list/", get("/list/").body
  end

  def test_a_file_changed_on_disk_is_served_new_within_a_second
    path = self.class.write("public/changing.txt", "before\n")
    assert_equal "before\n", get("/changing.txt").body
    File.binwrite(path, "after, longer\n")
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 2
    body = get("/changing.txt").body until body == "after, longer\n" || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    assert_equal "after, longer\n", body
  ensure
    File.delete(path) if path && File.exist?(path)
  end

  # ---------------------------------------------------------------- options of their own

  def test_dotfiles_and_listings_only_when_asked
    start_own_server("static.ru", "--public", ROOT, "--static-dotfiles", "--dir-listing")
    assert_equal "#{SECRET}\n", get("/.env").body
    listing = get("/list/")
    assert_equal [200, "text/html; charset=utf-8", "no-cache"], [listing.status, listing["content-type"], listing["cache-control"]]
    assert_includes listing.body, %(<a href="%3Cb%3E%26.txt">&lt;b&gt;&amp;.txt</a>)
    assert_includes listing.body, %(<a href="sub/">sub/</a>)
    assert_includes listing.body, %(<a href="../">../</a>)
    assert_includes get("/").body, "<h1>home</h1>"
    assert_equal "app: GET /out", get("/out").body # still no way out by a symlink
  end

  def test_static_groups_look_in_their_directories_in_order
    a = self.class.write("groups/a/one.txt", "one from a\n")
    self.class.write("groups/a/both.txt", "both from a\n")
    self.class.write("groups/b/both.txt", "both from b\n")
    self.class.write("groups/b/two.txt", "two from b\n")
    b = File.join(DIR, "groups/b")
    start_own_server("static.ru", "--no-public", "--static", "/files=#{File.dirname(a)}:#{b}")
    assert_equal ["one from a\n", "both from a\n", "two from b\n", "app: GET /files/three.txt", "app: GET /one.txt"],
                 %w[/files/one.txt /files/both.txt /files/two.txt /files/three.txt /one.txt].map { |p| get(p).body }
  end

  def static_only(*args, chdir:)
    process = CLIProcess.new("-b", "127.0.0.1", "-p", "0", "-w", "1", *Conformance.tls_args, "--static-only", *args,
                             chdir: chdir, command: [Conformance::COMMAND],
                             env: { "XDG_CACHE_HOME" => Conformance::CACHE })
    (@static_only ||= []) << process
    @port = process.port
  end

  def test_static_only_serves_a_directory_without_config_ru
    static_only(ROOT, chdir: DIR)
    assert_equal "hello world\n", get("/hello.txt").body
    assert_equal [404, "Not Found\n"], [get("/nope").status, get("/nope").body]
    res = raw_request("DELETE /hello.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert_equal [405, "GET, HEAD"], [res.status, res["allow"]]
    StaticTraversals::TARGETS.each { |target| assert_traversal_refused(target) }
  end

  def test_a_static_json_site
    self.class.write("site/public_html/about.html", "<p>about</p>\n")
    self.class.write("site/public_html/errors/404.html", "<p>lost</p>\n")
    self.class.write("site/public_html/index.html", "<p>home</p>\n")
    self.class.write("site/public_html/css/v1/site.css", "p {}\n")
    self.class.write("site/static.json", JSON.generate(
      "clean_urls" => true, "error_page" => "errors/404.html", "https_only" => true,
      "headers" => { "/about" => { "X-Frame-Options" => "DENY" },
                     "/css/**" => { "Cache-Control" => "public, max-age=60" } },
      "redirects" => { "/old/*" => { "url" => "/about", "status" => 302 } }
    ))
    static_only("--static-config", "static.json", "--trusted-proxy", "127.0.0.0/8", chdir: File.join(DIR, "site"))
    plain = get("/about")
    if Conformance::TLS
      assert_equal [200, "<p>about</p>\n"], [plain.status, plain.body], "https_only: this request came over TLS"
    else
      assert_equal [301, "https://localhost/about"], [plain.status, plain["location"]]
    end
    https = { "X-Forwarded-Proto" => "https" }
    about = get("/about", headers: https)
    assert_equal [200, "<p>about</p>\n", "DENY", "text/html; charset=utf-8"], [about.status, about.body, about["x-frame-options"], about["content-type"]]
    lost = get("/nowhere", headers: https)
    assert_equal [404, "<p>lost</p>\n"], [lost.status, lost.body]
    moved = get("/old/page", headers: https)
    assert_equal [302, "/about"], [moved.status, moved["location"]]
    css = get("/css/v1/site.css", headers: https)
    assert_equal [200, "public, max-age=60", nil], [css.status, css["cache-control"], css["x-frame-options"]]
    assert_equal ["404", "404"], ["/static.json", "/public_html/index.html"].map { |p| get(p, headers: https).status.to_s }
  end

  def test_a_missing_directory_is_a_one_line_error
    status, output = Conformance.run_command("--static-only", File.join(DIR, "nope"), "-p", "0", "-w", "1")
    assert_equal 1, status.exitstatus
    assert_equal "#{runtime}: --static-only: #{File.join(DIR, "nope")} is not a directory\n", output
  end
end
