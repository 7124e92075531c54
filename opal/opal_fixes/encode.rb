# frozen_string_literal: true

# String#encode with no encoding (or only options): MRI transcodes to
# Encoding.default_internal, which is nil, so the string comes back as it is. Opal's encode
# took the missing argument as the encoding's name and failed in its runtime ("Cannot read
# properties of undefined"); Sinatra's `data.force_encoding(encoding).encode!` runs so for
# every route parameter.
class String
  alias __opal_encode encode

  def encode(*args)
    target = args.first
    return self if target.nil? || ::Hash === target

    __opal_encode(target)
  end
end
