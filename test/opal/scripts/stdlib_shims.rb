# frozen_string_literal: true

# The stdlib shims in opal/ (digest, zlib, tempfile, uri, cgi/escape) against MRI's own.
require "digest"
require "digest/sha2"
require "zlib"
require "stringio"
require "tempfile"
require "uri"
require "cgi/escape"

text = "The quick brown fox – jumps"
p Digest::MD5.hexdigest(text), Digest::SHA1.hexdigest(text), Digest::SHA256.hexdigest(text)
p Digest::SHA256.base64digest(text), Digest::SHA512.hexdigest("")[0, 16], Digest::SHA384.new.hexdigest[0, 16]
d = Digest::SHA256.new
d << "The quick "
d.update("brown fox – jumps")
p d.hexdigest == Digest::SHA256.hexdigest(text), d.digest.bytes.first(4), d.digest.bytesize
p Digest::SHA1.hexdigest([0, 255, 128].pack("C*"))

p Zlib.crc32(text), Zlib.crc32("")
gz = Zlib.gzip(text)
p Zlib::GzipReader.wrap(StringIO.new(gz)).read, Zlib.gunzip(gz) == text.b
p Zlib::Inflate.inflate(Zlib::Deflate.deflate(text)).force_encoding("UTF-8")

tf = Tempfile.new(["up", ".txt"])
tf.write("line 1\n", "line 2\n")
tf << [0xff, 0x00].pack("C*")
tf.flush
p tf.size, File.extname(tf.path), File.basename(tf.path).start_with?("up")
tf.rewind
p tf.gets, tf.read(3), tf.read.bytes, tf.read, tf.read(1)
path = tf.path
tf.close
p File.exist?(path)
tf.unlink
p File.exist?(path), tf.path

u = URI.parse("https://user:pw@example.org:8443/a/b?x=1&y=%20#frag")
p u.scheme, u.userinfo, u.host, u.port, u.path, u.query, u.fragment, u.request_uri, u.to_s
p URI.parse("http://example.org/").port, URI("http://[::1]:9/x").hostname
p URI.encode_www_form([["a", "1"], ["b c", "é&"], ["d", nil]]), URI.decode_www_form("a=1&b+c=%C3%A9%26&d")
p URI.encode_www_form_component("a b*~é"), URI.decode_www_form_component("a+b%2A%7E%C3%A9")
# Every byte, control characters (one hex digit), text past the BMP, a cookie's base64.
p URI.encode_www_form_component((0..255).to_a.pack("C*")), URI.encode_www_form_component("\u0001\t😀 +/=%~!'()"),
  URI.encode_www_form_component([[74, 195, 188, 255, 251].pack("C*")].pack("m0")), URI.encode_www_form_component(12)
p URI::DEFAULT_PARSER.escape("/a b/é?x=[1]"), URI::DEFAULT_PARSER.unescape("%2Fa%20b")
regexps = URI::RFC2396_Parser.new.regexp
p %w[< a ; %].map { |c| regexps[:UNSAFE].match?(c) }, regexps[:ESCAPED].match?("%2F"), regexps[:ABS_URI].match?("http://h/")
p CGI.escapeHTML(%(<a href="x">'&'</a>))

require "base64"
bin = [0, 0xfe, 0xff, 0x41].pack("C*")
p Base64.strict_encode64(bin), Base64.encode64("x" * 50), Base64.urlsafe_encode64(bin), Base64.urlsafe_encode64(bin, padding: false)
p Base64.strict_encode64("Jürgen"), Base64.strict_decode64("AP7/QQ==").bytes, Base64.strict_decode64("AP7/QQ==").encoding
p Base64.decode64("eHh4\neHg=\n"), Base64.urlsafe_decode64("AP7_QQ").bytes, Base64.decode64(Base64.encode64(bin)) == bin
begin
  Base64.strict_decode64("AP7/QQ=")
rescue ArgumentError => e
  p e.class
end
