# frozen_string_literal: true
# backtick_javascript: true

require 'rack_compat/bytes'

# pack and unpack directives Opal 1.8 lacks or gets wrong, which Roda's sessions plugin uses:
# - 'v' and 'V' (little-endian 16- and 32-bit): Opal has them for String#unpack, as
#   aliases of 'S' and 'L', which it reads and writes little-endian, but Array#pack raises
#   "Unsupported pack directive". The format is mapped to 'S' and 'L'.
# - 'm' and 'm0' (base64) as the whole format, on the string's bytes (RackCompat::Bytes):
#   'm0' on one line (RFC 4648), 'm' with a newline after every 60 characters and at the end.
#   Opal has no 'm' in Array#pack, and its String#unpack('m0') gives the bytes as text, so
#   every byte above 0x7f became two; here they come back as a binary string.
class Array
  alias __opal_pack pack

  def pack(format)
    format = format.to_s
    # One Integer as 'v' or 'V' (rack-session's encrypted cookies pack their padding length
    # so on every response): the bytes Opal's 'S' and 'L' give, without parsing the format.
    %x{
      if ((format == 'v' || format == 'V') && self.length === 1 && Number.isInteger(self[0])) {
        var value = self[0], bytes = '';
        for (var i = format == 'v' ? 2 : 4; i > 0; i--) {
          bytes += String.fromCharCode(value & 255);
          value = value >> 8;
        }
        return Opal.enc(bytes, 'binary');
      }
    }
    return __opal_pack(format.tr('vV', 'SL')) unless format == 'm' || format == 'm0'

    # self[0] itself: to_str would give the primitive JS string, without its binary mark.
    base64 = `#{RackCompat::Bytes.to_buffer(self[0])}.toString('base64')`
    return base64 if format == 'm0' || base64.empty?

    base64.scan(/.{1,60}/).map { |line| "#{line}\n" }.join
  end
end

class String
  STRICT_BASE64 = %r{\A(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?\z}.freeze
  private_constant :STRICT_BASE64

  alias __opal_unpack unpack
  alias __opal_unpack1 unpack1

  def unpack(format, offset: 0)
    format = format.to_s
    return __opal_unpack(format, offset: offset) unless format == 'm' || format == 'm0'

    data = self[offset..]
    # 'm0' is strict on MRI (an ArgumentError, which Roda rescues); Node's decoder skips junk.
    raise ArgumentError, 'invalid base64' if format == 'm0' && !data.match?(STRICT_BASE64)

    [RackCompat::Bytes.from_buffer(`Buffer.from(#{data}, 'base64')`)]
  end

  def unpack1(format, offset: 0)
    return __opal_unpack1(format, offset: offset) unless format.to_s == 'm' || format.to_s == 'm0'

    unpack(format, offset: offset)[0]
  end
end
