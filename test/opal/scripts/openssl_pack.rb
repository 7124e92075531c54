# frozen_string_literal: true

# The shims Roda's sessions need (opal/openssl.rb, opal/rack_compat/pack.rb) against MRI's
# OpenSSL and pack: the same bytes for the same key, iv and data.
require "openssl"

# Opal's own unpack1 reads only the first letter of a format, so hex is made from bytes here.
hex = ->(str) { str.bytes.map { |b| format("%02x", b) }.join }

key = (0..31).map(&:chr).join.b
iv = "0123456789abcdef".b
plain = "{\"visits\":3,\"name\":\"J\u00fcrgen\"}".b

cipher = OpenSSL::Cipher.new("aes-256-ctr")
cipher.encrypt
cipher.key = key
cipher.iv = iv
sealed = cipher.update(plain) + cipher.final
p sealed.bytesize, hex.(sealed), sealed.encoding

opener = OpenSSL::Cipher.new("aes-256-ctr")
opener.decrypt
opener.key = key
opener.iv = iv
p (opener.update(sealed) + opener.final).force_encoding("UTF-8")
p OpenSSL::Cipher.new("aes-256-ctr").encrypt.random_iv.bytesize

mac = OpenSSL::HMAC.digest(OpenSSL::Digest::SHA256.new, key, sealed)
p mac.bytesize, hex.(mac), mac.encoding
p OpenSSL::HMAC.hexdigest(OpenSSL::Digest::SHA1.new, "k\u00e9y", "d\u00e4ta")
begin
  OpenSSL::Cipher.new("no-such-cipher")
rescue StandardError
  p "refused" # RuntimeError on Ruby 3.1's openssl, CipherError on later ones and here
end

p hex.([1, 0x1234, 0xdeadbeef].pack("vVV")), [0xfffe, 7, 0].pack("vVV").unpack("vVV")
# One Integer, as rack-session packs its padding length (a path of its own).
p hex.([0].pack("v")), hex.([0x1234].pack("v")), hex.([-2].pack("v")), hex.([0xdeadbeef].pack("V")), [300].pack("v").encoding
p [mac].pack("m0"), [plain].pack("m"), ["x" * 50].pack("m"), [""].pack("m")
p hex.("3q2+7w==".unpack1("m0")), "3q2+7w==".unpack("m0")[0].encoding
begin
  "3q2+7w=".unpack1("m0")
rescue ArgumentError => e
  p e.class
end

# AES-256-GCM with additional data and a tag, as rack-session's cookies (Encryptor V2).
gcm = OpenSSL::Cipher.new("aes-256-gcm")
gcm.encrypt
gcm.key = key
gcm.iv_len = 12
gcm.iv = iv[0, 12]
gcm.auth_data = "\x02salt".b
sealed = gcm.update(plain) + gcm.final
tag = gcm.auth_tag
p hex.(sealed), hex.(tag), tag.bytesize
[tag, tag.bytes.map { |b| b ^ 1 }.pack("C*")].each do |check|
  opener = OpenSSL::Cipher.new("aes-256-gcm")
  opener.decrypt
  opener.key = key
  opener.iv = iv[0, 12]
  opener.auth_tag = check
  opener.auth_data = "\x02salt".b
  p (opener.update(sealed) + opener.final).force_encoding("UTF-8")
rescue OpenSSL::Cipher::CipherError => e
  p e.class
end

# A part cut from bytes stays bytes (rack-session cuts its cookie's salt with slice).
bytes = [0xff, 1, 0x80, 2].pack("C*")
p bytes[0, 2].bytes, bytes.slice(1..).encoding, bytes.byteslice(2, 1).bytes, bytes[9], hex.(bytes[-2..])
require "json"
p JSON.parse(%({"name":"Jürgen"}).b), JSON.parse(%({"name":"Jürgen"}))

# bytes + bytes is bytes (Roda signs encrypted_data + key).
joined = bytes + [0xfe].pack("C*")
p joined.bytes, joined.encoding, ("ab" + "cd").encoding
# bytesize: UTF-8 strings (literal, changeable), bytes, and a NUL.
p "héllo".bytesize, "😀 and \u{10ffff}".bytesize, "".bytesize, String.new("héllo").bytesize, "héllo".b.bytesize,
  bytes.bytesize, joined.bytesize, "a\u0000b".bytesize
