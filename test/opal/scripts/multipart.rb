# frozen_string_literal: true

# Rack::Request parsing multipart/form-data: fields, UTF-8 names, files with bytes above
# 0x7f, RFC 5987 filename*, text/plain charset, and the Generator behind MockRequest.
require "rack"
require "rack/mock_request"
require "stringio"

BOUNDARY = "AaB03x"
FILE_BYTES = [0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0xfe, 0x80, 0xc3, 0xa9, 0x0d, 0x0a, 0x2d, 0x2d].freeze

# The request body as bytes: text parts are their UTF-8 bytes.
def body_bytes
  t = ->(s) { s.bytes }
  [
    t.call("--#{BOUNDARY}\r\ncontent-disposition: form-data; name=\"name\"\r\n\r\nJürgen\r\n"),
    t.call("--#{BOUNDARY}\r\ncontent-disposition: form-data; name=\"tags[]\"\r\n\r\na\r\n"),
    t.call("--#{BOUNDARY}\r\ncontent-disposition: form-data; name=\"tags[]\"\r\n\r\nb\r\n"),
    t.call("--#{BOUNDARY}\r\ncontent-disposition: form-data; name=\"note\"\r\ncontent-type: text/plain; charset=UTF-8\r\n\r\nnaïve\r\n"),
    t.call("--#{BOUNDARY}\r\ncontent-disposition: form-data; name=\"upload\"; filename=\"résumé.bin\"\r\n" \
           "content-type: application/octet-stream\r\n\r\n"),
    FILE_BYTES,
    t.call("\r\n--#{BOUNDARY}\r\ncontent-disposition: form-data; name=\"star\"; filename*=UTF-8''na%C3%AFve.txt\r\n" \
           "content-type: text/plain\r\n\r\nhello\r\n"),
    t.call("--#{BOUNDARY}\r\ncontent-disposition: form-data; name=\"empty\"; filename=\"\"\r\n\r\n\r\n"),
    t.call("--#{BOUNDARY}--\r\n"),
  ].flatten
end

body = body_bytes.pack("C*")
env = Rack::MockRequest.env_for("/upload", method: "POST", input: body,
                                "CONTENT_TYPE" => "multipart/form-data; boundary=#{BOUNDARY}")
req = Rack::Request.new(env)
params = req.POST
p params["name"], params["name"].encoding, params["tags"], params["note"], params["empty"]
up = params["upload"]
# inspect of binary strings differs between MRI and Opal; bytes and UTF-8 text do not.
p up.keys.map(&:to_s).sort, up[:filename].bytes, up[:type], up[:name]
p up[:head].dup.force_encoding("UTF-8")
data = up[:tempfile].read
p data.bytes, data.bytesize, data.encoding
p File.exist?(up[:tempfile].path), File.binread(up[:tempfile].path).bytes == FILE_BYTES
p params["star"][:filename], params["star"][:tempfile].read
p env["rack.tempfiles"].size
# Rack leaves its tempfiles to Rack::TempfileReaper: without it, each run left them in /tmp.
env["rack.tempfiles"].each(&:close!)

# Errors are Rack's: a body that ends before the closing boundary.
bad = Rack::MockRequest.env_for("/", method: "POST", input: "--#{BOUNDARY}\r\ncontent-disposition: form-data; name=\"a\"\r\n\r\nx",
                                "CONTENT_TYPE" => "multipart/form-data; boundary=#{BOUNDARY}")
begin
  Rack::Request.new(bad).POST
rescue => e
  p e.class, e.is_a?(Rack::BadRequest)
end

# Rack::MockRequest posting an UploadedFile goes through Rack::Multipart::Generator (which
# on MRI cannot mix a non-ASCII field with a binary file, so the title is ASCII).
file = Rack::Multipart::UploadedFile.new("fixtures/upload.bin", "application/octet-stream", true)
env = Rack::MockRequest.env_for("/", method: "POST", params: { "doc" => file, "title" => "Title" })
p env["CONTENT_TYPE"], env["CONTENT_LENGTH"]
params = Rack::Request.new(env).POST
p params["title"], params["doc"][:filename], params["doc"][:type]
p params["doc"][:tempfile].read.bytes == File.binread("fixtures/upload.bin").bytes
env["rack.tempfiles"].each(&:close!)
