# frozen_string_literal: true
# backtick_javascript: true

require 'strscan'
require 'rack_compat/bytes'

# Opal's StringScanner, amended for what Rack::Multipart::Parser needs:
# - concat/<< and string=, which Opal lacks (the parser appends each read to its buffer).
# - scan_until/check_until/skip_until/exist? as one regexp search from the scan pointer.
#   Opal's tried an anchored match at every offset of a fresh substring: quadratic in the
#   buffer (the parser scans up to 1 MB for a boundary), and \A matched at every offset.
#   Here \A (see rack_compat/regexp_source) matches only at the scan pointer, as on MRI.
# - pieces of a binary buffer stay binary (RackCompat::Bytes), so uploaded bytes survive.
class StringScanner
  def concat(str)
    @string = RackCompat::Bytes.join([@string, str])
    @working = __piece(`#{@string}.slice(#{@pos})`)
    self
  end
  alias << concat

  def string=(str)
    @string = str
    @working = str
    @pos = 0
    @matched = nil
    @match = []
  end

  def scan_until(pattern)
    __search(pattern, true, true)
  end

  def check_until(pattern)
    __search(pattern, false, true)
  end

  def skip_until(pattern)
    __search(pattern, true, false)
  end

  def exist?(pattern)
    __search(pattern, false, false)
  end

  def [](idx)
    return nil if @match.nil? || @match.empty?

    idx = idx.to_s if idx.is_a?(Symbol)
    group = idx.is_a?(String) ? `#{@match}.groups && #{@match}.groups[idx]` : `#{@match}[#{idx < 0 ? idx + `#{@match}.length` : idx}]`
    `#{group} == null` ? nil : __piece(group)
  end

  def rest
    __piece(@working)
  end

  def pos=(pos)
    pos += @string.length if pos < 0
    @pos = pos
    @working = __piece(`#{@string}.slice(pos)`)
  end

  def peek(length)
    __piece(`#{@working}.substring(0, length)`)
  end

  private

  # Finds `pattern` at or after the scan pointer. Returns the text from the pointer through
  # the match (want_text) or its length, or nil; advances past the match if `advance`.
  def __search(pattern, advance, want_text)
    %x{
      var re = #{@__regexps ||= `new Map()`}.get(pattern);
      if (re === undefined) {
        re = new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, '') + 'g');
        #{@__regexps}.set(pattern, re);
      }
      re.lastIndex = 0;
      var m = re.exec(#{@working});
      if (m === null) { #{@matched = nil}; return nil; }
      var size = m.index + m[0].length;
      var text = #{@working}.substr(0, size);
      #{@matched = `m[0]`};
      #{@match = `m`};
      if (#{advance}) {
        #{@prev_pos = `#{@pos} + m.index`};
        #{@pos += `size`};
        #{@working = __piece(`#{@working}.substr(size)`)};
      }
      return #{want_text} ? #{__piece(`text`)} : size;
    }
  end

  def __piece(str)
    RackCompat::Bytes.binary?(@string) ? RackCompat::Bytes.binary(str) : str
  end
end
