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
