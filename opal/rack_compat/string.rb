# frozen_string_literal: true
# backtick_javascript: true

# String#force_encoding on a primitive JS string raises FrozenError in Opal (only boxed
# String objects carry an encoding). Rack calls it as a statement on strings it just made
# (`name.force_encoding(encoding)` in the multipart parser) and as an expression
# (`.force_encoding(Encoding::BINARY)`). Here a primitive string returns a boxed copy in
# the wanted encoding: expressions get the right value, statements become no-ops instead of
# errors (a primitive string already stands for UTF-8 text, Rack's usual target).
class String
  alias __opal_force_encoding force_encoding

  def force_encoding(encoding)
    return __opal_force_encoding(encoding) unless `typeof self === 'string'`

    encoding = Encoding.find(encoding.to_s) unless encoding.is_a?(Encoding)
    return self if encoding == Encoding::UTF_8

    `Opal.enc(self, #{encoding.name})`
  end
end

# String#to_s in Opal returns the primitive JS string, which drops a boxed string's internal
# encoding; MRI returns self. Rack::Response buffers bodies with part.to_s, so binary parts
# (gzip from Rack::Deflater, file bytes) came back as text and their bytes changed. A string
# holding bytes (binary internal encoding) is returned as is; text keeps Opal's fast path.
class String
  alias __opal_to_s to_s

  def to_s
    `if (typeof self !== 'string' && self.internal_encoding && self.internal_encoding.name !== 'UTF-8' && self.$$class === Opal.String) return self`
    __opal_to_s
  end
end
