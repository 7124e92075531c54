# frozen_string_literal: true
# backtick_javascript: true

# Ruby regexp syntax that JS reads differently, fixed where Opal builds regexps at run time:
# Opal.regexp (every interpolated literal, and every literal with named groups, lookbehind
# or possessive quantifiers) and Regexp.new. Opal passes these sources to JS untouched, so
#   /\A#{x}\z/ matched "A<x>z" (JS reads \A as "A" and \z as "z"),
#   /#{re}{3}/ repeated only the last group of `re`, \h matched "h",
#   a /m regexp changed ^ and $ instead of letting . match newlines,
#   named groups next to plain parens read the wrong captures (Ruby's plain parens don't
#   capture once a group is named; JS's do), and Rack::Request's AUTHORITY, which names
#   `address` twice, did not even compile ("Duplicate capture group name" on Node 20), nor
#   did Rack::Lint's host pattern (subexpression calls \g<name>, names with '-', {,n}).
# Plain literals compiled to JS literals by Opal are not touched (they cannot be, at run
# time); Opal already turns \A and \z into ^ and $ in those.
# Regexp#__name_groups by Regexp, kept beside it rather than on it (a property would give the
# RegExp another shape).
%x{
  var up_name_groups = new WeakMap();
}

class Regexp
  # JS source and flags for a Ruby regexp source and Opal's JS-ish flags ('i', 'm' meaning
  # Ruby's /m). Ruby's ^ and $ are always line anchors (JS 'm'); Ruby's /m is JS's 's'.
  def self.__js_source(source, flags)
    key = "#{flags}/#{source}"
    @__js_sources ||= `new Map()`
    cached = `#{@__js_sources}.get(key)`
    return cached if `cached !== undefined`

    result = [__translate_source(source), __translate_flags(flags)]
    `#{@__js_sources}.set(key, result)`
    result
  end

  def self.__translate_flags(flags)
    flags = flags.to_s
    out = +'m'
    out = "#{out}s" if flags.include?('m')
    out = "#{out}i" if flags.include?('i')
    out = "#{out}g" if flags.include?('g')
    out = "#{out}u" if flags.include?('u')
    out = "#{out}y" if flags.include?('y')
    out
  end

  ANY = '[\\s\\S]'

  def self.__translate_source(src)
    src = __expand_calls(src) if src.include?('\\g<')
    named = /\(\?<[A-Za-z_]/.match?(src)
    seen = {}
    out = []
    in_class = false
    i = 0
    n = src.length
    while i < n
      c = src[i]
      if c == '\\'
        d = src[i + 1].to_s
        out << if in_class
                 d == 'h' ? '0-9a-fA-F' : "\\#{d}"
               else
                 case d
                 when 'A' then "(?<!#{ANY})"
                 when 'z' then "(?!#{ANY})"
                 when 'Z' then "(?=\\n?(?!#{ANY}))"
                 when 'h' then '[0-9a-fA-F]'
                 when 'H' then '[^0-9a-fA-F]'
                 else "\\#{d}"
                 end
               end
        i += 2
        next
      end

      if in_class
        in_class = false if c == ']'
        out << c
      elsif c == '['
        in_class = true
        out << c
        if src[i + 1] == ']' || (src[i + 1] == '^' && src[i + 2] == ']')
          # A ']' right after '[' or '[^' is a literal in Ruby.
          out << src[i + 1]
          i += 1
          if src[i] == '^'
            out << ']'
            i += 1
          end
        end
      elsif c == '('
        if src[i + 1] != '?'
          out << (named ? '(?:' : '(')
        elsif (m = /\A\(\?<([A-Za-z_][\w-]*)>/.match(src[i, 64]))
          name = m[1].tr('-', '_') # JS group names cannot hold '-'; Ruby's can
          seen[name] = (seen[name] || 0) + 1
          out << (seen[name] == 1 ? "(?<#{name}>" : "(?<#{name}__dup#{seen[name]}>")
          i += m[0].length
          next
        elsif src[i + 2] == '>'
          out << '(?:' # atomic group: JS has none, a plain group matches the same strings
          i += 3
          next
        elsif src[i + 2] == '#'
          close = src.index(')', i)
          i = close ? close + 1 : n
          next
        elsif (m = /\A\(\?[imx]*(?:-[imx]*)?(:|\))/.match(src[i, 16]))
          out << '(?:' if m[1] == ':'
          i += m[0].length
          next
        else
          out << c
        end
      elsif c == '{' && (m = /\A\{,(\d+)\}/.match(src[i, 16]))
        out << "{0,#{m[1]}}" # Ruby's {,n} is {0,n}; JS reads {,n} as text
        i += m[0].length
        next
      elsif '*+?}'.include?(c) && src[i + 1] == '+' && !(c == '?' && src[i - 1] == '(')
        out << c # possessive quantifier: JS has none, the greedy one matches the same strings
        i += 2
        next
      else
        out << c
      end
      i += 1
    end
    out.join
  end

  # Ruby source with each subexpression call \g<name> replaced by a copy of the group it
  # calls, names removed from the copy (JS has no calls; Rack::Lint's host pattern uses them
  # for IPv6 and IPv4 parts). Recursive calls are not supported (Ruby allows them).
  def self.__expand_calls(src, depth = 0, bodies = nil)
    raise RegexpError, "recursive subexpression call in /#{src}/" if depth > 8

    unless bodies
      bodies = {}
      src.scan(/\(\?<([A-Za-z_][\w-]*)>/).each { |(name)| bodies[name] ||= __group_body(src, "(?<#{name}>") }
    end
    src.gsub(/(\\*)\\g<([A-Za-z_][\w-]*)>/) do
      slashes = $1
      name = $2
      next "#{slashes}\\g<#{name}>" if slashes.length.odd? # an escaped backslash, then g<...>

      body = bodies[name] or raise RegexpError, "undefined name <#{name}> reference: /#{src}/"
      unnamed = body.gsub(/\(\?<([A-Za-z_][\w-]*)>/, '(?:')
      "#{slashes}(?:#{unnamed.include?('\\g<') ? __expand_calls(unnamed, depth + 1, bodies) : unnamed})"
    end
  end

  # The text inside the group opened by `opener` in `src` (to its matching paren).
  def self.__group_body(src, opener)
    start = src.index(opener) + opener.length
    depth = 1
    i = start
    in_class = false
    while i < src.length
      c = src[i]
      if c == '\\'
        i += 2
        next
      end
      if in_class
        in_class = false if c == ']'
      elsif c == '['
        in_class = true
      elsif c == '('
        depth += 1
      elsif c == ')'
        depth -= 1
        return src[start...i] if depth == 0
      end
      i += 1
    end
    raise RegexpError, "end pattern with unmatched parenthesis: /#{src}/"
  end

  class << self
    alias __opal_new new

    def new(regexp, options = nil)
      options = nil if `options == null` # Opal's own callers pass JS undefined
      return __opal_new(regexp) if regexp.is_a?(Regexp)

      flags = +''
      if options.is_a?(Integer)
        flags = "#{flags}i" if options & IGNORECASE != 0
        flags = "#{flags}m" if options & MULTILINE != 0
      elsif options
        flags = 'i'
      end
      source, js_flags = __js_source(Opal.coerce_to!(regexp, String, :to_str), flags)
      __js_regexp(source, js_flags)
    end
    alias compile new

    # A JS RegExp from translated source, marked so #options reads its flags the Ruby way.
    def __js_regexp(source, js_flags)
      %x{
        var re = new RegExp(source, js_flags);
        re.$$up_translated = true;
        return re;
      }
    end
  end

  # Ruby options of a regexp: a translated one always has JS 'm' (Ruby's ^ and $) and 's'
  # for Ruby's /m; a literal compiled by Opal has JS 'm' for Ruby's /m.
  def options
    o = 0
    o |= IGNORECASE if `self.ignoreCase`
    o |= MULTILINE if `self.dotAll || (self.multiline && !self.$$up_translated)`
    o
  end

  # Duplicate names were made unique (name__dup2, ...): report them under their Ruby name.
  def names
    __names.uniq
  end

  def named_captures
    hash = {}
    __name_groups.each { |name, indices| hash[name] = indices.dup }
    hash
  end

  # [[name, [group index, ...]], ...] in the order of first appearance, made once per Regexp
  # (its source never changes): Mustermann asks its pattern's on every request it routes.
  def __name_groups
    groups = `up_name_groups.get(self)`
    return groups unless `groups === undefined`

    groups = __names.each_with_index.group_by(&:first).map { |name, list| [name, list.map { |_, j| j + 1 }] }
    `up_name_groups.set(self, groups)`
    groups
  end

  def __names
    source.scan(/\(\?<([A-Za-z_]\w*)>/, no_matchdata: true).map { |(nm)| nm.sub(/__dup\d+\z/, '') }
  end
end

class MatchData
  # As on MRI, a name used by several groups gives the last one that matched.
  def named_captures
    matches = captures
    hash = {}
    regexp.__name_groups.each do |name, indices|
      value = nil
      i = indices.size - 1
      while value.nil? && i >= 0
        value = matches[indices[i] - 1]
        i -= 1
      end
      hash[name] = value
    end
    hash
  end
end

# Replaces Opal.regexp, which each compiled file binds when it loads: files loaded after this
# one (Rack, the app) get it; the file that requires rack_compat does not, so load
# rack_compat as its own unit first. An interpolated Regexp becomes a group, as MRI's
# (?-mix:...): Opal pasted its bare source, so Rack's /\A127#{octet}{3}\z/ repeated only
# the last group of `octet` and no IP counted as a trusted proxy.
%x{
  Opal.regexp = function(parts, flags) {
    var source = parts.map(function(part) {
      if (part instanceof RegExp) return '(?:' + part.source + ')';
      return part === '' ? '(?:)' : part;
    }).join('');
    var t = #{Regexp.__js_source(`source`, `flags || ''`)};
    return #{Regexp.__js_regexp(`t[0]`, `t[1]`)};
  };
}
