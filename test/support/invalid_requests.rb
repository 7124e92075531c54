# frozen_string_literal: true

# Every request a server must refuse, as raw bytes, with the status up_ruby's engine answers:
# test_request_invalid.rb sends them to up_ruby, conformance/test_limits.rb to every runtime.
# RFC 9112 §2.2 (bare CR, leading empty lines), §3 (request line), §3.2 (Host), §5.1 (no space
# before the colon), §5.2 (obs-fold), §6.1 (Transfer-Encoding, CL+TE), §6.3 (framing), §7.1
# (chunked); RFC 9110 §5.5 (field values), §8.6 (Content-Length), §15.5.14 (413), RFC 6585 §5
# (431).
module InvalidRequests
  H = "Host: x\r\n"

  CASES = {
    # request line
    "lower case version" => ["GET / http/1.1\r\n#{H}\r\n", 400],
    "no version" => ["GET /\r\n#{H}\r\n", 400],
    "two spaces after method" => ["GET  / HTTP/1.1\r\n#{H}\r\n", 400],
    "tab as separator" => ["GET\t/ HTTP/1.1\r\n#{H}\r\n", 400],
    "trailing space after version" => ["GET / HTTP/1.1 \r\n#{H}\r\n", 400],
    "method with a slash" => ["GE/T / HTTP/1.1\r\n#{H}\r\n", 400],
    "method with NUL" => ["G\0T / HTTP/1.1\r\n#{H}\r\n", 400],
    "target with space" => ["GET /a b HTTP/1.1\r\n#{H}\r\n", 400],
    "target with fragment" => ["GET /a#frag HTTP/1.1\r\n#{H}\r\n", 400],
    "target with control character" => ["GET /a\x01 HTTP/1.1\r\n#{H}\r\n", 400],
    "target with byte above 0x7e" => ["GET /caf\xC3\xA9 HTTP/1.1\r\n#{H}\r\n", 400],
    "target not starting with a slash" => ["GET a/b HTTP/1.1\r\n#{H}\r\n", 400],
    "asterisk form with GET" => ["GET * HTTP/1.1\r\n#{H}\r\n", 400],
    "authority form with GET" => ["GET example.com:80 HTTP/1.1\r\n#{H}\r\n", 400],
    "HTTP/2.0 request line" => ["GET / HTTP/2.0\r\n#{H}\r\n", 505],
    "HTTP/0.9 style" => ["GET / HTTP/0.9\r\n#{H}\r\n", 505],
    "version with letters" => ["GET / HTTP/1.x\r\n#{H}\r\n", 400],
    # line endings
    "bare LF line endings" => ["GET / HTTP/1.1\n#{H.chomp("\r\n")}\n\n", 400],
    "bare CR in request line" => ["GET /\r HTTP/1.1\r\n#{H}\r\n", 400],
    "bare CR in header value" => ["GET / HTTP/1.1\r\n#{H}X-A: a\rb\r\n\r\n", 400],
    # header fields
    "space before colon" => ["GET / HTTP/1.1\r\n#{H}X-A : b\r\n\r\n", 400],
    "tab before colon" => ["GET / HTTP/1.1\r\n#{H}X-A\t: b\r\n\r\n", 400],
    "obs-fold continuation line" => ["GET / HTTP/1.1\r\n#{H}X-A: b\r\n c\r\n\r\n", 400],
    "header without colon" => ["GET / HTTP/1.1\r\n#{H}X-A b\r\n\r\n", 400],
    "empty header name" => ["GET / HTTP/1.1\r\n#{H}: b\r\n\r\n", 400],
    "header name with space" => ["GET / HTTP/1.1\r\n#{H}X A: b\r\n\r\n", 400],
    "header name with non-token" => ["GET / HTTP/1.1\r\n#{H}X(A): b\r\n\r\n", 400],
    "NUL in header value" => ["GET / HTTP/1.1\r\n#{H}X-A: a\0b\r\n\r\n", 400],
    "DEL in header value" => ["GET / HTTP/1.1\r\n#{H}X-A: a\x7Fb\r\n\r\n", 400],
    "escape in header value" => ["GET / HTTP/1.1\r\n#{H}X-A: a\x1Bb\r\n\r\n", 400],
    # Host
    "HTTP/1.1 without Host" => ["GET / HTTP/1.1\r\n\r\n", 400],
    "two Host fields" => ["GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400],
    "Host with userinfo" => ["GET / HTTP/1.1\r\nHost: user@a\r\n\r\n", 400],
    "Host with space" => ["GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400],
    "Host with non-numeric port" => ["GET / HTTP/1.1\r\nHost: a:8x\r\n\r\n", 400],
    "Host with unclosed IPv6" => ["GET / HTTP/1.1\r\nHost: [::1\r\n\r\n", 400],
    # Content-Length
    "Content-Length with plus sign" => ["POST / HTTP/1.1\r\n#{H}Content-Length: +5\r\n\r\nhello", 400],
    "Content-Length negative" => ["POST / HTTP/1.1\r\n#{H}Content-Length: -5\r\n\r\nhello", 400],
    "Content-Length hex" => ["POST / HTTP/1.1\r\n#{H}Content-Length: 0x5\r\n\r\nhello", 400],
    "Content-Length with inner space" => ["POST / HTTP/1.1\r\n#{H}Content-Length: 5 5\r\n\r\nhello", 400],
    "Content-Length list" => ["POST / HTTP/1.1\r\n#{H}Content-Length: 5, 5\r\n\r\nhello", 400],
    "Content-Length twice, same value" => ["POST / HTTP/1.1\r\n#{H}Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400],
    "Content-Length twice, different" => ["POST / HTTP/1.1\r\n#{H}Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400],
    "Content-Length empty" => ["POST / HTTP/1.1\r\n#{H}Content-Length: \r\n\r\n", 400],
    "Content-Length overflowing" => ["POST / HTTP/1.1\r\n#{H}Content-Length: 99999999999999999999999\r\n\r\n", 400],
    # Transfer-Encoding
    "CL and TE together" => ["POST / HTTP/1.1\r\n#{H}Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400],
    "TE and CL together, TE first" => ["POST / HTTP/1.1\r\n#{H}Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", 400],
    "TE chunked twice" => ["POST / HTTP/1.1\r\n#{H}Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400],
    "TE chunked not last" => ["POST / HTTP/1.1\r\n#{H}Transfer-Encoding: chunked, gzip\r\n\r\n0\r\n\r\n", 400],
    "TE unknown coding" => ["POST / HTTP/1.1\r\n#{H}Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501],
    "TE identity" => ["POST / HTTP/1.1\r\n#{H}Transfer-Encoding: identity\r\n\r\n", 400],
    "TE chunked with parameter" => ["POST / HTTP/1.1\r\n#{H}Transfer-Encoding: chunked;x=1\r\n\r\n0\r\n\r\n", 400],
    "TE on HTTP/1.0" => ["POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400],
    # chunked body
    "chunk size not hex" => ["POST / HTTP/1.1\r\n#{H}Transfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n", 400],
    "chunk size with sign" => ["POST / HTTP/1.1\r\n#{H}Transfer-Encoding: chunked\r\n\r\n+5\r\nhello\r\n0\r\n\r\n", 400],
    "chunk size with 0x" => ["POST / HTTP/1.1\r\n#{H}Transfer-Encoding: chunked\r\n\r\n0x5\r\nhello\r\n0\r\n\r\n", 400],
    "chunk size overflowing" => ["POST / HTTP/1.1\r\n#{H}Transfer-Encoding: chunked\r\n\r\n10000000000000000\r\nhello\r\n0\r\n\r\n", 400],
    "chunk data too long for its size" => ["POST / HTTP/1.1\r\n#{H}Transfer-Encoding: chunked\r\n\r\n3\r\nhello\r\n0\r\n\r\n", 400],
    "chunk size line with bare LF" => ["POST / HTTP/1.1\r\n#{H}Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n", 400],
    "chunk extension with bad character" => ["POST / HTTP/1.1\r\n#{H}Transfer-Encoding: chunked\r\n\r\n5;a\x01=b\r\nhello\r\n0\r\n\r\n", 400],
    "bad trailer field" => ["POST / HTTP/1.1\r\n#{H}Transfer-Encoding: chunked\r\n\r\n0\r\nno colon here\r\n\r\n", 400]
  }.freeze
end
