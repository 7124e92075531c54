# frozen_string_literal: true

require 'stringio'
require 'rack_compat/bytes'

# StringIO behaviours Rack relies on that Opal's StringIO lacks or gets wrong. Rack reads
# request bodies from a StringIO (Rack::MockRequest, and apps and servers that buffer), and
# Rack::Lint checks IO semantics, so these follow MRI:
#   read()/read(nil) at EOF is "", read(n) at EOF is nil, read(0) is ""; Opal gave nil for
#   all, and `read(n, buf)` called buf.write. A buffer made to change (`"".dup`, opal_fixes/
#   mutable_strings.rb) is filled in place and returned, as MRI does (Rack::RewindableInput
#   reads so); any other buffer cannot change, and the data is returned.
#   size/length, binmode, set_encoding and external_encoding exist (MockRequest calls them).
#   What is read from a binary string is binary too (JS substrings drop the mark), so
#   request bodies keep their bytes.
class StringIO
  def read(length = nil, outbuf = nil)
    data = __up_read(length)
    return data unless outbuf && `#{outbuf}.$$up_mutable === true`

    outbuf.replace(data || '')
    data && outbuf
  end

  private def __up_read(length)
    check_readable
    raise ArgumentError, "negative length #{length} given" if length && length < 0

    if length.nil?
      str = @string[@position..-1] || ''
      @position = @string.length
      return __piece(str)
    end
    return '' if length == 0
    return nil if @position >= @string.length

    str = @string[@position, length]
    @position = [@position + length, @string.length].min
    __piece(str)
  end

  def __piece(str)
    RackCompat::Bytes.binary?(@string) ? RackCompat::Bytes.binary(str) : str
  end

  # Bytes, as on MRI (Rack::MockRequest turns it into CONTENT_LENGTH).
  def size
    @string.bytesize
  end
  alias length size

  def binmode
    self
  end

  # Recorded, not applied: the characters are already what they are (Rack::Lint checks
  # that rack.input says ASCII-8BIT, which MockRequest sets here).
  def set_encoding(encoding, *)
    @external_encoding = encoding && (encoding.is_a?(Encoding) ? encoding : Encoding.find(encoding.to_s))
    self
  end

  def external_encoding
    @external_encoding || @string.encoding
  end

  def internal_encoding
    nil
  end
end
