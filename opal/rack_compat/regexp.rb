# frozen_string_literal: true
# backtick_javascript: true

# Regexp features Rack uses that Opal lacks.
#
# - Regexp::NOENCODING: Rack::URLMap passes it to Regexp.new; JS regexps have no encoding
#   flag, and Opal's Regexp.new ignores option bits it doesn't know.
# - Regexp.union of parts with different options: Rack::Request builds its trusted-proxy
#   filter from case-sensitive and /i parts. MRI wraps each part as (?i-mx:...); Opal raises
#   TypeError, and Node 20's JS has no inline modifiers. So /i parts in a mixed union are
#   rewritten to match both cases explicitly (`a` -> `[aA]`, `[a-f]` -> `[a-fA-F]`), which
#   means the same for the ASCII letters Rack's patterns use. A mixed /m union loses /m
#   (JS has one dotAll flag per regexp); Rack has none.
class Regexp
  NOENCODING = 32 unless const_defined?(:NOENCODING)
  FIXEDENCODING = 16 unless const_defined?(:FIXEDENCODING)

  class << self
    # Parts are joined as (?:...) groups, as MRI's (?-mix:...) groups, so union adds no
    # captures. Strings are escaped. The result is case-insensitive only if every part is.
    def union(*parts)
      list = parts.length == 1 && parts[0].is_a?(Array) ? parts[0] : parts
      return /(?!)/ if list.empty?
      return list[0] if list.length == 1 && list[0].is_a?(Regexp)

      regexps = list.select { |x| x.is_a?(Regexp) }
      all_i = !regexps.empty? && regexps.all? { |r| (r.options & IGNORECASE) != 0 } &&
              list.all? { |x| x.is_a?(Regexp) }
      all_m = !regexps.empty? && regexps.all? { |r| (r.options & MULTILINE) != 0 }
      sources = list.map do |x|
        if x.is_a?(Regexp)
          src = !all_i && (x.options & IGNORECASE) != 0 ? __fold_case(x.source) : x.source
          "(?:#{src})"
        else
          escape(Opal.coerce_to!(x, String, :to_str))
        end
      end
      new(sources.join('|'), (all_i ? IGNORECASE : 0) | (all_m ? MULTILINE : 0))
    end

    # `source` with every ASCII letter matching both cases, outside and inside [...];
    # the character after a backslash is left alone (\A, \d, \h keep their meaning).
    def __fold_case(source)
      out = []
      chars = source.chars
      i = 0
      in_class = false
      while i < chars.length
        c = chars[i]
        if c == '\\'
          out << c << chars[i + 1].to_s
          i += 2
          next
        end
        if in_class
          if c == ']'
            in_class = false
            out << c
          elsif chars[i + 1] == '-' && chars[i + 2] && chars[i + 2] != ']' && __letter?(c) && __letter?(chars[i + 2])
            lo = chars[i + 2]
            out << "#{c}-#{lo}#{__swap(c)}-#{__swap(lo)}"
            i += 3
            next
          else
            out << (__letter?(c) ? "#{c}#{__swap(c)}" : c)
          end
        elsif c == '['
          in_class = true
          out << c
          if chars[i + 1] == '^'
            out << '^'
            i += 1
          end
        else
          out << (__letter?(c) ? "[#{c}#{__swap(c)}]" : c)
        end
        i += 1
      end
      out.join
    end

    def __letter?(c)
      /\A[A-Za-z]\z/.match?(c)
    end

    def __swap(c)
      c == c.upcase ? c.downcase : c.upcase
    end
  end
end
