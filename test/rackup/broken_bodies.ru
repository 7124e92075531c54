# frozen_string_literal: true

# Response bodies that raise while the server walks them, before a byte is sent; anything
# else gets a plain 200, to show the worker still serves after them.
#   /nul_path    to_path returns a String with a NUL byte (no file can have that name)
#   /respond_to  respond_to? itself raises

# Its each is only a fallback, and it raises too: either way the answer is a 500.
class NulPathBody
  def to_path
    "/tmp/a\0b"
  end

  def each
    raise "NulPathBody#each: the path was unusable, and so is this"
  end

  def close; end
end

class RespondToRaises
  def respond_to?(name, include_all = false)
    raise "RespondToRaises#respond_to?(#{name.inspect}, #{include_all})"
  end

  def each
    yield "unreachable"
  end
end

run lambda { |env|
  case env["PATH_INFO"]
  when "/nul_path" then [200, { "content-type" => "text/plain" }, NulPathBody.new]
  when "/respond_to" then [200, { "content-type" => "text/plain" }, RespondToRaises.new]
  else [200, { "content-type" => "text/plain" }, ["still serving"]]
  end
}
