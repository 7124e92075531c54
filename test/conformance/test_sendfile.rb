# frozen_string_literal: true

# Files an app hands the server, the same on every runtime: the env says
# "sendfile.type" => "x-sendfile", so Rack::Sendfile answers a to_path body with an x-sendfile
# field; that field (any case: a Rack 2 app spells it X-Sendfile), or a to_path body alone, is
# sent from the file with the rules of a static file: ranges (RFC 9110 §14), conditional
# requests and If-Range (§13), HEAD without a body, the engine's etag format. The app's status,
# content-type and validators count; the path never reaches the client; a path that names no
# file is a 404; every body is closed.
require_relative "helper"
require "time"

class TestConformanceSendfile < ConformanceTest
  DIR = Dir.mktmpdir("up-conformance-sendfile")
  BIG = Random.new(11).bytes(300_000)
  Minitest.after_run { FileUtils.rm_rf(DIR) }

  def self.write(name, data)
    path = File.join(DIR, name)
    File.binwrite(path, data)
    path
  end

  HELLO = write("hello.txt", "hello world\n")
  BIG_PATH = write("big.bin", BIG)
  # An hour old: a date validator is strong only a second after the file changed (§13.1.5).
  HOUR_AGO = Time.now - 3600
  File.utime(HOUR_AGO, HOUR_AGO, HELLO)

  # Each way an app hands over a file that keeps the engine's rules.
  ROUTES = %w[/sendfile /to_path /field /rack2_field].freeze

  serve "sendfile.ru"

  # The etag the engine gives a file (ext/up/engine/handlers/file_cache.c): its mtime's seconds and
  # nanoseconds and its size, in hex.
  def engine_etag(path)
    stat = File.stat(path)
    format('"%x.%x-%x"', stat.mtime.to_i, stat.mtime.nsec, stat.size)
  end

  def head(path, headers: {})
    lines = headers.map { |k, v| "#{k}: #{v}\r\n" }.join
    raw_request("HEAD #{path} HTTP/1.1\r\nHost: localhost\r\n#{lines}Connection: close\r\n\r\n", head: true)
  end

  def test_env_says_the_server_sends_files
    assert_equal "x-sendfile", get("/env").body
  end

  def test_each_route_sends_the_file_with_the_engines_validators_and_no_path
    ROUTES.each do |route|
      res = get("#{route}?#{HELLO}")
      assert_equal [200, "hello world\n", "12"], [res.status, res.body, res["content-length"]], route
      assert_equal ["application/x-up-test", "bytes"], [res["content-type"], res["accept-ranges"]], route
      assert_equal [engine_etag(HELLO), HOUR_AGO.httpdate], [res["etag"], res["last-modified"]], route
      assert_nil res["x-sendfile"], "#{route}: the file's path is not sent to the client"
    end
  end

  def test_a_large_file_arrives_whole
    %w[/sendfile /to_path /field].each do |route|
      res = get("#{route}?#{BIG_PATH}")
      assert_equal [200, BIG.bytesize.to_s], [res.status, res["content-length"]], route
      assert res.body == BIG, "#{route}: the body differs from the file"
    end
  end

  # RFC 9110 §14.1.2: single, open and suffix ranges; 416 names the size (§15.5.17).
  def test_ranges_single_open_suffix_and_unsatisfiable
    ROUTES.each do |route|
      { "bytes=1000-1023" => [1000, 1023], "bytes=100000-" => [100_000, 299_999], "bytes=-10" => [299_990, 299_999] }.each do |range, (first, last)|
        res = get("#{route}?#{BIG_PATH}", headers: { "Range" => range })
        assert_equal [206, "bytes #{first}-#{last}/300000"], [res.status, res["content-range"]], "#{route} #{range}"
        assert res.body == BIG[first..last], "#{route} #{range}: the part differs"
      end
      res = get("#{route}?#{HELLO}", headers: { "Range" => "bytes=12-" })
      assert_equal [416, "bytes */12", ""], [res.status, res["content-range"], res.body.to_s], route
    end
  end

  # §14.6: several ranges as multipart/byteranges, each part with the app's content-type.
  def test_several_ranges_come_as_multipart_byteranges
    res = get("/sendfile?#{HELLO}", headers: { "Range" => "bytes=0-4,-6" })
    assert_equal 206, res.status
    boundary = res["content-type"][%r{\Amultipart/byteranges; boundary=(\S+)\z}, 1] or flunk res["content-type"]
    parts = res.body.split("--#{boundary}")
    assert_equal ["\r\n", "--\r\n"], [parts.first, parts.last]
    assert_equal ["hello", "world\n"], parts[1..-2].map { |p| p.split("\r\n\r\n", 2).last.chomp("\r\n") }
    assert_includes parts[1], "content-type: application/x-up-test\r\ncontent-range: bytes 0-4/12"
    assert_equal res.body.bytesize, Integer(res["content-length"])
  end

  # §13.2.2: If-None-Match, then If-Modified-Since, give a 304 with the validators and no
  # content-type; If-Match and If-Unmodified-Since that fail give a 412 (§15.5.13) that says
  # why in its body, as every other error (§15.5) and as nginx's does.
  def test_conditional_requests
    etag = engine_etag(HELLO)
    ROUTES.each do |route|
      [{ "If-None-Match" => etag }, { "If-Modified-Since" => HOUR_AGO.httpdate }].each do |fields|
        res = get("#{route}?#{HELLO}", headers: fields)
        assert_equal [304, "", etag, nil, nil], [res.status, res.body.to_s, res["etag"], res["content-type"], res["content-length"]], "#{route} #{fields}"
      end
      assert_equal 200, get("#{route}?#{HELLO}", headers: { "If-None-Match" => '"other"' }).status, route
      [{ "If-Match" => '"other"' }, { "If-Unmodified-Since" => (HOUR_AGO - 60).httpdate }].each do |fields|
        res = get("#{route}?#{HELLO}", headers: fields)
        assert_equal [412, "Precondition Failed\n", "text/plain; charset=utf-8", "20"],
                     [res.status, res.body, res["content-type"], res["content-length"]], "#{route} #{fields}"
        assert_nil res["accept-ranges"], route
      end
    end
  end

  # §13.1.5: the range only while the validator matches, the whole file otherwise.
  def test_if_range_decides_the_range
    etag = engine_etag(HELLO)
    { etag => [206, "hello"], '"0.0-c"' => [200, "hello world\n"], HOUR_AGO.httpdate => [206, "hello"],
      (HOUR_AGO + 60).httpdate => [200, "hello world\n"] }.each do |if_range, expected|
      res = get("/sendfile?#{HELLO}", headers: { "Range" => "bytes=0-4", "If-Range" => if_range })
      assert_equal expected, [res.status, res.body], if_range
    end
  end

  def test_head_has_the_files_length_and_no_body
    ROUTES.each do |route|
      res = head("#{route}?#{BIG_PATH}")
      assert_equal [200, BIG.bytesize.to_s, "application/x-up-test", ""], [res.status, res["content-length"], res["content-type"], res.body.to_s], route
      assert_equal engine_etag(BIG_PATH), res["etag"], route
    end
  end

  # A status other than 200 is the app's answer: the whole file, no ranges, no validators of
  # the engine's.
  def test_the_apps_own_status_is_sent_whole_without_ranges
    res = get("/status/404?#{HELLO}", headers: { "Range" => "bytes=0-4" })
    assert_equal [404, "hello world\n", "text/plain", nil, nil], [res.status, res.body, res["content-type"], res["content-range"], res["accept-ranges"]]
  end

  # The app's etag and last-modified are the validators, and no second one is added.
  def test_the_apps_validators_are_the_ones_checked
    res = get("/validators?#{HELLO}")
    assert_equal [200, ['"app-tag"'], ["Sun, 06 Nov 1994 08:49:37 GMT"]], [res.status, res.headers["etag"], res.headers["last-modified"]]
    assert_equal 304, get("/validators?#{HELLO}", headers: { "If-None-Match" => '"app-tag"' }).status
    assert_equal 200, get("/validators?#{HELLO}", headers: { "If-None-Match" => engine_etag(HELLO) }).status
    assert_equal 304, get("/validators?#{HELLO}", headers: { "If-Modified-Since" => "Sun, 06 Nov 1994 08:49:37 GMT" }).status
  end

  # A 204 has no content (RFC 9110 §15.3.5): no file is sent, and the field is not either.
  def test_a_bodiless_status_sends_neither_the_file_nor_its_path
    res = get("/no_content?#{HELLO}")
    assert_equal [204, nil, nil], [res.status, res["x-sendfile"], res["content-length"]]
    refute_includes res.raw, HELLO
  end

  def test_a_path_that_names_no_file_is_404_and_the_server_goes_on
    missing = File.join(DIR, "nope.txt")
    [["/field", 404], ["/rack2_field", 404]].each do |route, status|
      res = get("#{route}?#{missing}")
      assert_equal status, res.status, route
      refute_includes res.body, DIR, "#{route}: the path is not sent to the client"
    end
    assert_equal 500, get("/field?#{DIR}").status, "a directory is no file to send"
    assert_equal "hello world\n", get("/field?#{HELLO}").body
  end

  def test_every_body_is_closed
    before = closed_count
    %w[/sendfile /to_path /field /rack2_field].each do |route|
      assert_equal 200, get("#{route}?#{HELLO}", headers: tagged).status, route
    end
    assert_equal 304, get("/sendfile?#{HELLO}", headers: tagged("If-None-Match" => engine_etag(HELLO))).status
    assert_equal 200, head("/to_path?#{HELLO}", headers: tagged).status
    assert_closed_count_reaches(before + 6)
  end
end
