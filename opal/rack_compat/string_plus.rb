# frozen_string_literal: true
# backtick_javascript: true
# use_strict: true

require 'rack_compat/bytes'

# bytes + bytes (or + text) is bytes, as on MRI: Opal's String#+ concatenated as JS does, and
# the result, text, lost the mark (opal/README.md, "Bytes and text"). Roda's sessions sign
# `encrypted_data + key`, and the HMAC of the changed bytes never matched. Two plain strings
# (the usual case) keep JS's concatenation. (Strict mode: a primitive string stays one here.)
class String
  alias __opal_plus +

  def +(other)
    return `self + other` if `typeof self === 'string' && typeof other === 'string'`
    return __opal_plus(other) unless RackCompat::Bytes.binary?(self) || (::String === other && RackCompat::Bytes.binary?(other))

    RackCompat::Bytes.join([self, ::Opal.coerce_to!(other, ::String, :to_str)])
  end
end
