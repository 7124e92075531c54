# frozen_string_literal: true

# Static files answered by the engine before the app, over real sockets with real clients:
# curl downloads, resumes (-C), asks for ranges (-r) and conditionally (-z, --etag-compare) and
# decodes a precompressed variant (--compressed); raw requests check what curl would tidy up
# (traversal attempts, If-Range both ways round, several ranges). No request may return a byte
# of a secret planted beside the root. The CLI (--public, the default public/ beside config.ru,
# --no-public, --static, --static-only, --static-config, --dir-listing, --static-dotfiles,
# --trusted-proxy, the config file's directives) runs as users run it, exe/up_ruby. RFC 9110
# sections are cited where a check is about one of its rules.
require_relative "helper"
require_relative "support/cli_process"
require_relative "support/static_traversals"
require "fileutils"
require "json"
require "open3"
require "time"
require "tmpdir"
require "up/options"
require "up/static_files"
require "zlib"

class TestStaticFiles < Minitest::Test
  include UpTestHelpers

  SECRET = "SECRET-#{Process.pid}"
  APP = ->(env) { [404, { "content-type" => "text/plain" }, ["app: #{env["PATH_INFO"]}"]] }

  def setup
    @dir = Dir.mktmpdir("up-static")
    @root = File.join(@dir, "public")
    write("secret.txt", "#{SECRET}\n")
    write("public/hello.txt", "hello world\n")
    write("public/index.html", "<h1>home</h1>\n")
    write("public/docs/index.html", "<h1>docs</h1>\n")
    @big = Random.new(42).bytes(300_000)
    write("public/big.bin", @big)
    @css = "body { color: #333 }\n" * 200
    write("public/app.css", @css)
    write("public/app.css.gz", Zlib.gzip(@css))
    write("public/assets/app-0123abcd.js", "console.log(1)\n")
    write("public/.env", "#{SECRET}\n")
    File.symlink("../secret.txt", File.join(@root, "out"))
  end

  def teardown
    super
    @cli&.stop
    FileUtils.rm_rf(@dir)
  end

  # ---------------------------------------------------------------- in-process server

  def serve(settings = {})
    options = Up::Options.new({ public: @root }.merge(settings)).to_h
    start_server(APP, static: Up::StaticFiles.new(options, dir: @dir).to_h)
  end

  def url(path)
    "http://127.0.0.1:#{@port}#{path}"
  end

  # curl with a deadline; returns [stdout, status]. stdout is binary.
  def curl(*args)
    out, err, status = Open3.capture3("curl", "-sS", "--max-time", "10", *args, binmode: true)
    assert status.success?, "curl #{args.join(" ")} failed: #{err}"
    out
  end

  def write(rel, data)
    path = File.join(@dir, rel)
    FileUtils.mkdir_p(File.dirname(path))
    File.binwrite(path, data)
  end

  def test_curl_downloads_a_file_and_resumes_it_with_a_range
    serve
    out = File.join(@dir, "big.out")
    curl("-o", out, url("/big.bin"))
    assert_equal @big, File.binread(out)
    # A download cut at 100 000 bytes, resumed: curl asks for bytes=100000- (RFC 9110 §14.1.2).
    File.binwrite(out, @big[0, 100_000])
    headers = curl("-C", "-", "-D", "-", "-o", out, url("/big.bin"))
    assert_match %r{\AHTTP/1.1 206 Partial Content}, headers
    assert_includes headers, "content-range: bytes 100000-299999/300000"
    assert_equal @big, File.binread(out)
    assert_equal @big[1000, 24], curl("-r", "1000-1023", url("/big.bin"))
    assert_equal @big[-10..], curl("-r", "-10", url("/big.bin"))
  end

  def test_curl_head_gets_the_length_and_no_body
    serve
    head = curl("-I", url("/hello.txt"))
    assert_match %r{\AHTTP/1.1 200 OK\r\n}, head
    assert_includes head, "content-length: 12\r\n"
    assert_includes head, "content-type: text/plain; charset=utf-8\r\n"
    assert_includes head, "accept-ranges: bytes\r\n"
  end

  def test_curl_conditional_requests_get_304
    serve
    etags = File.join(@dir, "etags")
    out = curl("--etag-save", etags, url("/hello.txt"))
    assert_equal "hello world\n", out
    assert_match(/\A"\h+\.\h+-c"\n?\z/, File.read(etags))
    code = curl("--etag-compare", etags, "-o", File::NULL, "-w", "%{http_code}", url("/hello.txt"))
    assert_equal "304", code
    # -z FILE: If-Modified-Since the file's mtime (RFC 9110 §13.1.3).
    FileUtils.touch(etags, mtime: File.mtime(File.join(@root, "hello.txt")))
    code = curl("-z", etags, "-o", File::NULL, "-w", "%{http_code}", url("/hello.txt"))
    assert_equal "304", code
    FileUtils.touch(etags, mtime: Time.at(0))
    assert_equal "hello world\n", curl("-z", etags, url("/hello.txt"))
  end

  # RFC 9110 §13.1.5: the range only while the validator matches, the whole file otherwise.
  # (Iodine answers the other way round.)
  def test_if_range_honours_the_range_only_when_the_validator_matches
    serve
    first = get("/hello.txt")
    etag = first["etag"]
    ranged = get("/hello.txt", headers: { "Range" => "bytes=0-4", "If-Range" => etag })
    assert_equal [206, "hello"], [ranged.status, ranged.body]
    stale = get("/hello.txt", headers: { "Range" => "bytes=0-4", "If-Range" => '"0.0-c"' })
    assert_equal [200, "hello world\n"], [stale.status, stale.body]
    old_date = get("/hello.txt", headers: { "Range" => "bytes=0-4", "If-Range" => "Thu, 01 Jan 1970 00:00:00 GMT" })
    assert_equal [200, "hello world\n"], [old_date.status, old_date.body]
  end

  # If-Range by date: only a strong one counts (§13.1.5: the last modification at least a
  # second before the response's Date), so the file is made an hour old first.
  def test_if_range_by_date_honours_the_range_only_for_the_exact_date
    hour_ago = Time.now - 3600
    File.utime(hour_ago, hour_ago, File.join(@root, "hello.txt"))
    serve
    date = get("/hello.txt")["last-modified"]
    assert_equal hour_ago.httpdate, date
    ranged = get("/hello.txt", headers: { "Range" => "bytes=6-", "If-Range" => date })
    assert_equal [206, "world\n", "bytes 6-11/12"], [ranged.status, ranged.body, ranged["content-range"]]
    later = (hour_ago + 60).httpdate
    whole = get("/hello.txt", headers: { "Range" => "bytes=6-", "If-Range" => later })
    assert_equal [200, "hello world\n", nil], [whole.status, whole.body, whole["content-range"]]
  end

  def test_several_ranges_come_as_multipart_byteranges
    serve
    res = get("/hello.txt", headers: { "Range" => "bytes=0-4,-6" })
    assert_equal 206, res.status
    boundary = res["content-type"][/\Amultipart\/byteranges; boundary=(\S+)\z/, 1] or flunk res["content-type"]
    parts = res.body.split("--#{boundary}")
    assert_equal ["\r\n", "--\r\n"], [parts.first, parts.last]
    assert_equal ["hello", "world\n"], parts[1..-2].map { |p| p.split("\r\n\r\n", 2).last.chomp("\r\n") }
    assert_includes parts[2], "content-range: bytes 6-11/12"
    assert_equal res.body.bytesize, Integer(res["content-length"])
  end

  def test_unsatisfiable_range_is_416_with_the_size
    serve
    res = get("/hello.txt", headers: { "Range" => "bytes=12-" })
    assert_equal [416, "bytes */12"], [res.status, res["content-range"]]
  end

  # A precompressed sibling chosen by Accept-Encoding, with vary on every response of that file
  # (nginx's gzip_static leaves vary out unless told: RFC 9110 §12.5.5).
  def test_curl_compressed_gets_the_gzip_variant_and_vary
    serve
    out = curl("--compressed", "-D", File.join(@dir, "h"), url("/app.css"))
    assert_equal @css, out
    headers = File.read(File.join(@dir, "h"))
    assert_includes headers, "content-encoding: gzip"
    assert_includes headers, "vary: accept-encoding"
    identity = get("/app.css")
    assert_equal [@css, "accept-encoding", nil], [identity.body, identity["vary"], identity["content-encoding"]]
  end

  # Accept-Encoding's q-values choose among .br, .zst and .gz (§12.5.3): the highest weight
  # wins, br before zstd before gzip at equal weights; q=0 refuses a coding, "*" stands for
  # those not named, and identity goes out when nothing else is acceptable. Each variant's
  # bytes say which one came; every answer varies on accept-encoding.
  def test_accept_encoding_q_values_choose_among_br_zstd_and_gzip
    write("public/app.css.br", "BR-BYTES")
    write("public/app.css.zst", "ZSTD-BYTES")
    serve
    {
      "gzip, deflate, br, zstd" => ["br", "BR-BYTES"],
      "gzip;q=1.0, br;q=0.5, zstd;q=0.9" => ["gzip", Zlib.gzip(@css)],
      "br;q=0.2, zstd" => ["zstd", "ZSTD-BYTES"],
      "br;q=0, zstd;q=0, gzip;q=0.001" => ["gzip", nil],
      "*;q=0.5, br;q=0" => ["zstd", "ZSTD-BYTES"],
      "br;q=0, zstd;q=0, gzip;q=0" => [nil, @css],
      "identity;q=1, gzip;q=0.5" => [nil, @css],
      "deflate, compress" => [nil, @css],
      "BR;Q=1" => ["br", "BR-BYTES"]
    }.each do |accept, (coding, body)|
      res = get("/app.css", headers: { "Accept-Encoding" => accept })
      assert_equal [200, coding, "accept-encoding"], [res.status, res["content-encoding"], res["vary"]], accept
      assert_equal "text/css; charset=utf-8", res["content-type"], accept
      assert_equal body, res.body, accept if body
    end
    # A range applies to the variant sent, and its etag differs from the file's.
    br = get("/app.css", headers: { "Accept-Encoding" => "br", "Range" => "bytes=0-1" })
    assert_equal [206, "BR", "bytes 0-1/8"], [br.status, br.body, br["content-range"]]
    refute_equal get("/app.css")["etag"], br["etag"]
  end

  def test_fingerprinted_assets_are_immutable
    serve
    assert_equal "public, max-age=31536000, immutable", get("/assets/app-0123abcd.js")["cache-control"]
    assert_nil get("/hello.txt")["cache-control"]
  end

  def test_directories_redirect_to_their_slash_and_serve_index_html
    serve
    res = get("/docs?x=1")
    assert_equal [301, "/docs/?x=1"], [res.status, res["location"]]
    assert_equal "<h1>docs</h1>\n", curl("-L", url("/docs"))
    assert_equal "<h1>home</h1>\n", curl(url("/"))
  end

  TRAVERSALS = StaticTraversals::TARGETS

  def test_traversal_attempts_never_return_a_byte_from_outside_the_root
    serve
    TRAVERSALS.each do |target|
      sock = connect
      sock.write("GET #{target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
      bytes = sock.read.to_s
      refute_includes bytes, SECRET, "#{target} leaked the secret"
      assert_match %r{\AHTTP/1.1 (404|400) }, bytes, target
    end
    out = curl("--path-as-is", "-o", "-", "-w", "%{http_code}", url("/../secret.txt"))
    refute_includes out, SECRET
  end

  def test_a_file_changed_on_disk_is_served_new_within_a_second
    serve
    assert_equal "hello world\n", get("/hello.txt").body
    write("public/hello.txt", "hello again, world\n")
    changed_at = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    body = nil
    until (body = get("/hello.txt").body) == "hello again, world\n"
      flunk "still the old file after 3 s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) - changed_at > 3
      assert_equal "hello world\n", body
      sleep 0.05
    end
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - changed_at, :<, 2.0
    File.delete(File.join(@root, "hello.txt"))
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 3
    sleep 0.05 until get("/hello.txt").status == 404 || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    assert_equal "app: /hello.txt", get("/hello.txt").body
  end

  # A deploy replaces a file by renaming a new one over it (a new inode): the cache's check
  # compares device and inode as well as size and times, so even a replacement with the same
  # size and mtime is seen.
  def test_a_file_replaced_by_rename_is_served_new_within_a_second
    serve
    path = File.join(@root, "hello.txt")
    stat = File.stat(path)
    assert_equal "hello world\n", get("/hello.txt").body
    write("public/hello.txt.new", "HELLO WORLD\n")
    File.utime(stat.atime, stat.mtime, "#{path}.new")
    File.rename("#{path}.new", path)
    replaced_at = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    until (body = get("/hello.txt").body) == "HELLO WORLD\n"
      flunk "still the old file after 3 s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) - replaced_at > 3
      assert_equal "hello world\n", body
      sleep 0.05
    end
    assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - replaced_at, :<, 2.0
  end

  def test_misses_and_other_methods_go_to_the_app
    server = serve
    assert_equal "app: /posts/1", get("/posts/1").body
    post = raw_request("POST /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    assert_equal "app: /hello.txt", post.body
    assert_equal 2, server.server.stats[:requests] - server.server.stats[:static_files]
  end

  def test_access_log_has_a_line_for_a_file
    log = File.join(@dir, "access.log")
    options = Up::Options.new({ public: @root }).to_h
    server = start_server(APP, static: Up::StaticFiles.new(options, dir: @dir).to_h, access_log: log)
    get("/hello.txt")
    server.stop
    assert_match %r{\A127\.0\.0\.1 - - \[.+\] "GET /hello\.txt HTTP/1\.1" 200 12 0\.\d{6}\n\z}, File.read(log)
  end

  # ---------------------------------------------------------------- the command line

  def up_ruby(*args, chdir: @dir)
    @cli = CLIProcess.new("-p", "0", "-b", "127.0.0.1", "-w", "1", *args, chdir: chdir)
    @port = @cli.port
  end

  def test_public_beside_config_ru_is_served_by_default_and_no_public_turns_it_off
    File.write(File.join(@dir, "config.ru"), "run ->(env) { [200, {}, [\"app: \#{env['PATH_INFO']}\"]] }\n")
    up_ruby
    res = get("/hello.txt")
    assert_equal ["hello world\n", "bytes"], [res.body, res["accept-ranges"]]
    assert_equal "app: /nope", get("/nope").body
    @cli.stop
    up_ruby("--no-public")
    assert_equal "app: /hello.txt", get("/hello.txt").body
  end

  def test_static_groups_look_in_their_directories_in_order
    write("a/one.txt", "one from a\n")
    write("a/both.txt", "both from a\n")
    write("b/both.txt", "both from b\n")
    write("b/two.txt", "two from b\n")
    File.write(File.join(@dir, "config.ru"), "run ->(env) { [404, {}, ['app']] }\n")
    up_ruby("--no-public", "--static", "/files=a:b")
    assert_equal ["one from a\n", "both from a\n", "two from b\n", "app"],
                 %w[one both two three].map { |n| get("/files/#{n}.txt").body }
  end

  def test_static_only_serves_a_directory_without_config_ru
    up_ruby("--static-only", @root)
    assert_equal "hello world\n", curl(url("/hello.txt"))
    assert_equal "404", curl("-o", File::NULL, "-w", "%{http_code}", url("/nope"))
    res = raw_request("DELETE /hello.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert_equal [405, "GET, HEAD"], [res.status, res["allow"]]
    TRAVERSALS.each do |target|
      sock = connect
      sock.write("GET #{target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
      bytes = sock.read.to_s
      refute_includes bytes, SECRET, target
      assert_match %r{\AHTTP/1.1 (404|400) }, bytes, target
    end
  end

  def test_a_static_json_site
    write("site/public_html/about.html", "<p>about</p>\n")
    write("site/public_html/errors/404.html", "<p>lost</p>\n")
    write("site/public_html/index.html", "<p>home</p>\n")
    write("site/public_html/css/v1/site.css", "p {}\n")
    File.write(File.join(@dir, "site/static.json"), JSON.generate(
      "clean_urls" => true, "error_page" => "errors/404.html", "https_only" => true,
      "headers" => { "/about" => { "X-Frame-Options" => "DENY" },
                     "/css/**" => { "Cache-Control" => "public, max-age=60" } },
      "redirects" => { "/old/*" => { "url" => "/about", "status" => 302 } }
    ))
    up_ruby("--static-only", "--static-config", "static.json", "--trusted-proxy", "127.0.0.0/8",
            chdir: File.join(@dir, "site"))
    plain = get("/about")
    assert_equal [301, "https://localhost/about"], [plain.status, plain["location"]]
    https = { "X-Forwarded-Proto" => "https" }
    about = get("/about", headers: https)
    assert_equal [200, "<p>about</p>\n", "DENY"], [about.status, about.body, about["x-frame-options"]]
    lost = get("/nowhere", headers: https)
    assert_equal [404, "<p>lost</p>\n"], [lost.status, lost.body]
    moved = get("/old/page", headers: https)
    assert_equal [302, "/about"], [moved.status, moved["location"]]
    css = get("/css/v1/site.css", headers: https)
    assert_equal [200, "public, max-age=60", nil], [css.status, css["cache-control"], css["x-frame-options"]]
    assert_nil about["cache-control"]
  end

  # root: relative to static.json's directory; files outside it (the config itself included)
  # are not served.
  def test_a_static_json_root
    write("site/dist/index.html", "<p>dist</p>\n")
    write("site/public_html/index.html", "<p>not this one</p>\n")
    File.write(File.join(@dir, "site/static.json"), JSON.generate("root" => "dist/"))
    up_ruby("--static-only", "--static-config", "static.json", chdir: File.join(@dir, "site"))
    assert_equal "<p>dist</p>\n", curl(url("/"))
    assert_equal ["404", "404"], ["/static.json", "/public_html/index.html"].map { |p|
      curl("-o", File::NULL, "-w", "%{http_code}", url(p))
    }
  end

  def test_https_only_ignores_forwarded_proto_from_untrusted_addresses
    write("site/public_html/index.html", "<p>home</p>\n")
    File.write(File.join(@dir, "site/static.json"), JSON.generate("https_only" => true))
    up_ruby("--static-only", "--static-config", "static.json", "--trusted-proxy", "10.0.0.0/8",
            chdir: File.join(@dir, "site"))
    assert_equal 301, get("/", headers: { "X-Forwarded-Proto" => "https" }).status
  end

  def test_dotfiles_and_listings_only_when_asked
    File.write(File.join(@dir, "config.ru"), "run ->(env) { [404, {}, ['app']] }\n")
    up_ruby
    assert_equal "app", get("/.env").body
    assert_equal "app", get("/docs/x/").body
    @cli.stop
    write("public/list/<b>&.txt", "x")
    up_ruby("--static-dotfiles", "--dir-listing")
    assert_equal "#{SECRET}\n", get("/.env").body
    listing = get("/list/")
    assert_equal "text/html; charset=utf-8", listing["content-type"]
    assert_includes listing.body, %(<a href="%3Cb%3E%26.txt">&lt;b&gt;&amp;.txt</a>)
  end

  def test_config_file_directives_have_the_same_names
    write("a/x.txt", "x from a\n")
    FileUtils.mkdir_p(File.join(@dir, "config"))
    File.write(File.join(@dir, "config/up.rb"), <<~RUBY)
      public "public"
      static "/files", "a"
      dir_listing true
    RUBY
    File.write(File.join(@dir, "config.ru"), "run ->(env) { [404, {}, ['app']] }\n")
    up_ruby
    assert_equal ["hello world\n", "x from a\n"], [get("/hello.txt").body, get("/files/x.txt").body]
    assert_includes get("/docs/").body, "docs"
  end

  # In cluster mode too (the default: a worker per core), where each worker would otherwise
  # fail to boot over it, forever.
  def test_a_missing_directory_is_a_one_line_error
    cli = CLIProcess.new("--static-only", File.join(@dir, "nope"), "-p", "0", "-w", "2", chdir: @dir, wait: false)
    assert_equal 1, cli.wait(timeout: 20).exitstatus
    assert_equal "up_ruby: --static-only: #{File.join(@dir, "nope")} is not a directory\n", cli.output
  end
end
