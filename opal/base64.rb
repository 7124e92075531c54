# frozen_string_literal: true

# Base64 on a string's bytes, as MRI's is: through pack("m") and unpack1("m"), which
# opal/rack_compat/pack.rb does on bytes. Opal's stdlib encoded a string's characters (so
# text above 0x7f was not its UTF-8, and above 0xff raised) and decoded to text, one
# character per byte but not marked as bytes: rack-session's cookie came back 156 bytes long
# instead of 93 and never opened.
module Base64
  module_function

  def encode64(bin)
    [bin].pack('m')
  end

  def decode64(str)
    str.unpack1('m')
  end

  def strict_encode64(bin)
    [bin].pack('m0')
  end

  def strict_decode64(str)
    str.unpack1('m0')
  end

  def urlsafe_encode64(bin, padding: true)
    str = strict_encode64(bin).tr('+/', '-_')
    padding ? str : str.delete('=')
  end

  def urlsafe_decode64(str)
    str = str.ljust((str.length + 3) & ~3, '=') if !str.end_with?('=') && str.length % 4 != 0
    strict_decode64(str.tr('-_', '+/'))
  end
end
