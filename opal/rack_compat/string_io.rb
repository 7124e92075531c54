# frozen_string_literal: true

require 'stringio'

# StringIO behaviours Rack relies on that Opal's StringIO lacks or gets wrong. Rack reads
# request bodies from a StringIO (Rack::MockRequest, and apps and servers that buffer), and
# Rack::Lint checks IO semantics, so these follow MRI:
#   read()/read(nil) at EOF is "", read(n) at EOF is nil, read(0) is ""; Opal gave nil for
#   all, and `read(n, buf)` called buf.write. A String buffer cannot be filled in place
#   under Opal (strings are immutable), so the data is returned, which is what Rack uses.
#   size/length, binmode, set_encoding and external_encoding exist (MockRequest calls them).
class StringIO
  def read(length = nil, outbuf = nil)
    check_readable
    raise ArgumentError, "negative length #{length} given" if length && length < 0

    if length.nil?
      str = @string[@position..-1] || ''
      @position = @string.length
      return str
    end
    return '' if length == 0
    return nil if @position >= @string.length

    str = @string[@position, length]
    @position = [@position + length, @string.length].min
    str
  end

  # Bytes, as on MRI (Rack::MockRequest turns it into CONTENT_LENGTH).
  def size
    @string.bytesize
  end
  alias length size

  def binmode
    self
  end

  def set_encoding(*)
    self
  end

  def external_encoding
    @string.encoding
  end

  def internal_encoding
    nil
  end
end
