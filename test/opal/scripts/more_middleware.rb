# frozen_string_literal: true

# Less common Rack parts: Directory, RewindableInput, Lock, Sendfile, TempfileReaper,
# Config, NullLogger, MediaType and Builder#freeze_app.
require "rack"
require "rack/mock_request"
require "stringio"

def show(label, res)
  headers = res.headers.to_h.reject { |k, _| %w[date last-modified].include?(k) }
  body = res.body.gsub(/<td class='mtime'>[^<]*</, "<td class='mtime'>MTIME<")
  p [label, res.status, headers, body]
end

dir = Rack::Directory.new("fixtures")
show "directory", Rack::MockRequest.new(dir).get("/public/sub/")
show "directory_file", Rack::MockRequest.new(dir).get("/public/hello.txt")
show "directory_forbidden", Rack::MockRequest.new(dir).get("/public/../../x")
show "directory_missing", Rack::MockRequest.new(dir).get("/nope")

# A non-rewindable input (no #rewind) is copied into a tempfile on demand.
class OneShot
  def initialize(data)
    @io = StringIO.new(data)
  end

  def read(*args)
    @io.read(*args)
  end

  def each(&block)
    @io.each(&block)
  end

  def close; end
end
rw = Rack::RewindableInput.new(OneShot.new("line one\nline two\n" * 600))
p rw.read(9), rw.gets, rw.size
rw.rewind
p rw.read.bytesize
rw.rewind
p rw.each.first(2) rescue p $!.class
rw.close

locked = Rack::Lock.new(->(_e) { [200, {}, ["locked"]] })
show "lock", Rack::MockRequest.new(locked).get("/")

sendfile = Rack::Sendfile.new(->(_e) { [200, {}, Rack::Files.new("fixtures").get({ "PATH_INFO" => "/public/hello.txt", "REQUEST_METHOD" => "GET" })[2]] },
                              "x-sendfile")
res = Rack::MockRequest.new(sendfile).get("/", "HTTP_X_SENDFILE_TYPE" => "x-sendfile")
p ["sendfile", res.status, res["x-sendfile"].to_s.end_with?("fixtures/public/hello.txt"), res.body]

reaped = []
reaper = Rack::TempfileReaper.new(->(env) do
  tf = Tempfile.new("reap")
  (env["rack.tempfiles"] ||= []) << tf
  reaped << tf
  [200, {}, ["ok"]]
end)
show "tempfile_reaper", Rack::MockRequest.new(reaper).get("/")
p reaped.map(&:closed?), reaped.map(&:path)

config = Rack::Config.new(->(env) { [200, {}, [env["greeting"]]] }) { |env| env["greeting"] = "hi" }
show "config", Rack::MockRequest.new(config).get("/")
show "null_logger", Rack::MockRequest.new(Rack::NullLogger.new(->(env) { env["rack.logger"].info("x"); [200, {}, ["quiet"]] })).get("/")

# (a middleware on top: Opal cannot freeze a lambda, which is a JS function)
app = Rack::Builder.new do
  use Rack::ContentLength
  run ->(_e) { [200, {}, ["frozen"]] }
end
app.freeze_app
p app.to_app.frozen?, app.call({})[2]
p Rack::MediaType.type("Text/HTML ; q=1"), Rack::MediaType.params("multipart/form-data; boundary=\"x y\"; A=1")
