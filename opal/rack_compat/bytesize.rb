# frozen_string_literal: true
# backtick_javascript: true
# use_strict: true

# String#bytesize from Node's count of UTF-8 bytes. Opal's builds an Array of every byte
# through an Enumerator on each call, and Rack apps ask it of every body part (Roda's
# response sums its content-length so). Bytes (binary) and other encodings keep Opal's
# answer.
class String
  alias __opal_bytesize bytesize

  def bytesize
    %x{
      if (typeof self === 'string' || ((self.encoding == null || self.encoding.name === 'UTF-8') &&
          (self.internal_encoding == null || self.internal_encoding.name === 'UTF-8'))) {
        return Buffer.byteLength(self.toString(), 'utf8');
      }
    }
    __opal_bytesize
  end
end
