# frozen_string_literal: true
# backtick_javascript: true

# File.fnmatch and File.fnmatch?, missing from Opal's File (Sinatra matches each Accept
# entry against a type with it). MRI's rules: `*`, `?`, `[...]` (`!` or `^` negates; an
# unclosed one matches nothing), `\` escapes; with FNM_PATHNAME wildcards stop at "/" and
# `**/` matches any run of directories; a period that starts the name (each segment with
# FNM_PATHNAME) is matched only by a period in the pattern unless FNM_DOTMATCH;
# FNM_CASEFOLD; FNM_EXTGLOB expands `{a,b}` first. Each segment pattern becomes one
# JavaScript RegExp (with the u flag, so `?` is one character, not one UTF-16 unit).
class File
  FNM_NOESCAPE = 1 unless const_defined?(:FNM_NOESCAPE)
  FNM_PATHNAME = 2 unless const_defined?(:FNM_PATHNAME)
  FNM_DOTMATCH = 4 unless const_defined?(:FNM_DOTMATCH)
  FNM_CASEFOLD = 8 unless const_defined?(:FNM_CASEFOLD)
  FNM_EXTGLOB = 16 unless const_defined?(:FNM_EXTGLOB)
  FNM_SYSCASE = 0 unless const_defined?(:FNM_SYSCASE)
  FNM_SHORTNAME = 0 unless const_defined?(:FNM_SHORTNAME)

  def self.fnmatch(pattern, path, flags = 0)
    pattern = pattern.to_str
    path = path.respond_to?(:to_path) ? path.to_path : path.to_str
    patterns = flags & FNM_EXTGLOB == 0 ? [pattern] : Fnmatch.expand_braces(pattern, flags & FNM_NOESCAPE == 0)
    patterns.any? { |one| Fnmatch.new(one, flags).match?(path) }
  end

  class << self
    alias fnmatch? fnmatch
  end

  # One pattern of File.fnmatch, with its flags.
  class Fnmatch
    # `{a,b{c,d}}x` as ["ax", "bcx", "bdx"]; a brace without its pair stays as it is.
    def self.expand_braces(pattern, escapes)
      depth = 0
      open = nil
      commas = []
      index = 0
      while index < pattern.length
        char = pattern[index]
        if char == '\\' && escapes
          index += 1
        elsif char == '{'
          open = index if depth == 0
          depth += 1
        elsif char == ',' && depth == 1
          commas << index
        elsif char == '}' && depth > 0
          depth -= 1
          if depth == 0
            head = pattern[0...open]
            tail = pattern[(index + 1)..]
            cuts = [open, *commas, index]
            return cuts.each_cons(2).flat_map do |from, to|
              expand_braces("#{head}#{pattern[(from + 1)...to]}#{tail}", escapes)
            end
          end
        end
        index += 1
      end
      [pattern]
    end

    def initialize(pattern, flags)
      @pattern = pattern
      @pathname = flags & FNM_PATHNAME != 0
      @dotmatch = flags & FNM_DOTMATCH != 0
      @escapes = flags & FNM_NOESCAPE == 0
      @casefold = flags & FNM_CASEFOLD != 0
    end

    def match?(path)
      return segment_match?(@pattern, path) unless @pathname

      segments_match?(@pattern.split('/', -1), path.split('/', -1))
    end

    private

    def segments_match?(patterns, names)
      return names.empty? if patterns.empty?

      if patterns.first == '**' && patterns.size > 1
        rest = patterns.drop(1)
        names.each_index do |skip|
          return true if segments_match?(rest, names.drop(skip))
          return false if !@dotmatch && names[skip].start_with?('.')
        end
        return false
      end
      !names.empty? && segment_match?(patterns.first, names.first) &&
        segments_match?(patterns.drop(1), names.drop(1))
    end

    def segment_match?(pattern, name)
      if !@dotmatch && name.start_with?('.')
        literal_dot = pattern.start_with?('.') || (@escapes && pattern.start_with?('\\.'))
        return false unless literal_dot
      end
      source = regexp_source(pattern)
      return false unless source

      `new RegExp(#{source}, #{@casefold ? 'iu' : 'u'}).test(#{name})`
    end

    SYNTAX = '^$\\.*+?()[]{}|/'

    # The pattern as a JS RegExp source matching the whole name; nil when a bracket is not
    # closed (then nothing matches, as in MRI).
    def regexp_source(pattern)
      chars = pattern.chars
      out = ['^']
      index = 0
      while index < chars.size
        char = chars[index]
        case char
        when '*' then out << '[\\s\\S]*'
        when '?' then out << '[\\s\\S]'
        when '['
          bracket, index = bracket_source(chars, index + 1)
          return nil unless bracket

          out << bracket
        when '\\'
          if @escapes && index + 1 < chars.size
            index += 1
            out << literal(chars[index])
          else
            out << '\\\\'
          end
        else out << literal(char)
        end
        index += 1
      end
      out << '$'
      out.join
    end

    # [source, index of the closing "]"], or nil when there is none.
    def bracket_source(chars, index)
      out = ['[']
      if chars[index] == '!' || chars[index] == '^'
        out << '^'
        index += 1
      end
      first = true
      while index < chars.size
        char = chars[index]
        return [out.join + ']', index] if char == ']' && !first

        char = chars[index += 1] if char == '\\' && @escapes && index + 1 < chars.size
        out << (char == '-' && !first && chars[index + 1] != ']' ? '-' : "\\u{#{char.ord.to_s(16)}}")
        first = false
        index += 1
      end
      [nil, index]
    end

    def literal(char)
      SYNTAX.include?(char) ? "\\#{char}" : char
    end
  end
end
