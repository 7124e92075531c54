# frozen_string_literal: true

# Encodings Rack names that Opal does not register. Rack::Multipart::Parser lists
# ISO-2022-JP (a dummy encoding on MRI) in a constant at load time; here it is registered as
# a dummy too, so the constant exists and the parser's re-encoding branch is never taken for
# a string Opal could not decode anyway.
unless Encoding.const_defined?(:ISO_2022_JP)
  Encoding.register 'ISO-2022-JP', aliases: ['CP50220', 'CP50221'], ascii: false, dummy: true
end
