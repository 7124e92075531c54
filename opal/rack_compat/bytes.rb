# frozen_string_literal: true
# backtick_javascript: true

module RackCompat
  # The boundary between Ruby strings and Node Buffers, for the shims that hand bytes to Node
  # (digest, zlib, tempfile). Opal strings are UTF-16 JS strings; a string whose internal
  # encoding is binary holds one byte per character, any other string stands for its UTF-8
  # encoding (so "é".b, binary only in name, is still C3 A9, as on MRI). Strings made from
  # bytes come back binary in both senses. Opal loses the internal encoding when strings
  # are concatenated; code that joins binary data should use Bytes.join.
  module Bytes
    def self.binary?(str)
      enc = `str.internal_encoding`
      `#{enc} != null` && enc.binary?
    end

    # A Node Buffer with the bytes MRI would see in `str`.
    def self.to_buffer(str)
      str = str.to_s
      `Buffer.from(str.toString(), #{binary?(str) ? 'latin1' : 'utf8'})`
    end

    # A binary string of the bytes in a Node Buffer (or Uint8Array).
    def self.from_buffer(buf)
      `Opal.enc(Buffer.from(buf.buffer || buf, buf.byteOffset || 0, buf.length).toString('latin1'), 'binary')`
    end

    # The concatenation of `strings`, keeping bytes: JS concatenation drops the binary
    # internal encoding, so if any part is binary the parts are joined as bytes.
    def self.join(strings)
      return strings.join unless strings.any? { |s| `#{s}.internal_encoding` && binary?(s) }

      from_buffer(`Buffer.concat(#{strings.map { |s| to_buffer(s) }})`)
    end

    # Array of Integers 0..255, as String#bytes on MRI.
    def self.bytes(str)
      `Array.from(#{to_buffer(str)})`
    end

    # String of `bytes` in `enc`: UTF-8 is decoded (invalid sequences become U+FFFD, since a
    # JS string cannot carry them), a binary encoding keeps one character per byte.
    def self.string(bytes, enc = Encoding::UTF_8)
      enc = Encoding.find(enc.to_s) unless enc.is_a?(Encoding)
      buf = `Buffer.from(bytes)`
      enc.binary? ? from_buffer(buf) : `buf.toString('utf8')`
    end
  end
end
