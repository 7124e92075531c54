# frozen_string_literal: true

require 'json'
require 'rack_compat/bytes'

# JSON read from bytes is read as UTF-8, as MRI's parser reads a binary String. Opal's
# JSON.parse read each byte as one character: a session that rack-session decrypted (bytes)
# with "Jürgen" in it came back as "JÃ¼rgen".
module JSON
  class << self
    alias __opal_parse parse

    def parse(source, options = {})
      source = RackCompat::Bytes.utf8(source) if ::String === source && RackCompat::Bytes.binary?(source)
      __opal_parse(source, options)
    end
  end
end
