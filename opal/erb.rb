# frozen_string_literal: true

# ERB as MRI's stdlib has it: a template compiled to Ruby source (`ERB.new(str,
# trim_mode:, eoutvar:).src`), which Tilt, and so Sinatra's `erb`, evaluates with
# class_eval (opal/opal_fixes/string_eval.rb loads Opal's parser for that). Opal's own erb
# has only ERB::Util, for its `.opalerb` templates, compiled when the bundle is built; those
# still work: this file loads Template and keeps ERB::Util.
#
# The source appends to the output variable with `<<`, which Opal runs through the rewriting
# of Strings changed in place (opal/opal_fixes/mutable_strings.rb). Each line of the template
# stays one line of the source, so errors name the template's lines (and, as in MRI, a `#`
# comment in a `<% %>` tag runs to the end of its line). Trim modes: "-"
# (`<%-` drops the indentation before it, `-%>` the newline after it), "<>" (a line that
# starts with `<%` and ends with `%>` leaves out its newline), ">" (a line that ends with
# `%>` does), "%" (a line starting with "%" is Ruby; "%%" is a literal "%"), and their
# combinations.
require 'template'

class ERB
  module Util
    ESCAPES = { '&' => '&amp;', '<' => '&lt;', '>' => '&gt;', '"' => '&quot;', "'" => '&#39;' }.freeze

    def html_escape(value)
      value.to_s.gsub(/[&<>"']/) { |char| ESCAPES[char] }
    end
    alias h html_escape

    def url_encode(value)
      value.to_s.b.gsub(/[^a-zA-Z0-9_\-.~]/) { |char| format('%%%02X', char.ord) }
    end
    alias u url_encode

    module_function :html_escape, :h, :url_encode, :u
  end

  # A template split into text and tags, trimmed as the mode says, as Ruby source.
  class Compiler
    # In "-" mode a "-" just inside a tag's delimiters trims; otherwise it is Ruby. In a tag,
    # "%%>" stands for "%>". ([\s\S], not /m: Opal compiles a /m literal to a JS regexp
    # whose "." stops at a newline.)
    TAG = /<%(%|=|#)?((?:%%>|[\s\S])*?)()%>/
    DASH_TAG = /<%(%|=|#|-)?((?:%%>|[\s\S])*?)(-)?%>/

    def initialize(trim_mode, eoutvar)
      trim_mode = trim_mode.to_s
      @percent = trim_mode.include?('%')
      @dash = trim_mode.include?('-')
      @angle = trim_mode.include?('<>')
      @gt = !@angle && trim_mode.include?('>')
      @out = eoutvar
    end

    def compile(template)
      code = ["#coding:UTF-8\n#{@out} = +''; "]
      tokens(template).each { |kind, body| code << emit(kind, body) }
      code << @out
      code.join
    end

    private

    # [[:text, str] or [:code, str] or [:expr, str] or [:comment, str]], trimmed.
    def tokens(template)
      lines = template.lines
      chunks = []
      text = +''
      lines.each do |line|
        if @percent && line.start_with?('%') && !line.start_with?('%%')
          chunks << [:text, text] unless text.empty?
          text = +''
          chunks << [:code, line[1..].chomp] << [:comment, line.end_with?("\n") ? "\n" : '']
        elsif @percent && line.start_with?('%%')
          text += line[1..]
        else
          text += line
        end
      end
      chunks << [:text, text] unless text.empty?
      chunks.flat_map { |kind, body| kind == :text ? trim(split(body)) : [[kind, body]] }
    end

    def split(text)
      tokens = []
      rest = text
      while (match = (@dash ? DASH_TAG : TAG).match(rest))
        tokens << [:text, match.pre_match.gsub('<%%', '<%')]
        tokens << tag(match)
        rest = match.post_match
      end
      tokens << [:text, rest.gsub('<%%', '<%')]
    end

    def tag(match)
      marker, body, dash = match.captures
      return [:text, "<%#{body}#{dash}%>"] if marker == '%'

      body = body.gsub('%%>', '%>')
      kind = { '=' => :expr, '#' => :comment }.fetch(marker, :code)
      [kind, body, marker == '-', dash == '-']
    end

    # Drops what the trim mode drops around each tag: first the indentation before each
    # `<%-`, judged on the text as written, then the newlines.
    def trim(tokens)
      tokens.each_with_index do |token, index|
        strip_indent(tokens[index - 1], index - 1) if @dash && token.first != :text && token[2] && index.positive?
      end
      drops = tokens.each_index.select do |index|
        token = tokens[index]
        token.first != :text && ((@dash && token[3]) || @gt || (@angle && line_of_tags?(tokens, index)))
      end
      # A dropped newline still ends a line of the source, as in MRI (so a `#` comment in
      # code ends there).
      tokens.each_with_index.flat_map do |token, index|
        next [token] unless drops.include?(index - 1) && token[1].match?(/\A\r?\n/)

        [[:comment, "\n"], [:text, token[1].sub(/\A\r?\n/, '')]]
      end
    end

    # `<%-`: the spaces and tabs between the start of its line and the tag go.
    def strip_indent(before, index)
      last_line = before[1].split("\n", -1).last.to_s
      return unless last_line.match?(/\A[ \t]*\z/)
      return unless before[1].include?("\n") || index.zero?

      before[1] = before[1][0, before[1].length - last_line.length]
    end

    # Whether the line of the tag at index starts with a tag (nothing between the start of
    # the line, or of the template, and the line's first tag).
    def line_of_tags?(tokens, index)
      (index - 1).downto(0) do |i|
        text = tokens[i]
        next unless text.first == :text
        return text[1].end_with?("\n") if text[1].include?("\n")
        return false if i.zero? && !text[1].empty?
      end
      true
    end

    def emit(kind, body)
      case kind
      when :text then text(body)
      when :expr then "#{@out}.<<((#{body}).to_s); #{"\n" * body.count("\n")}"
      # As in MRI, a comment in code runs to the end of the template's line.
      when :code then "#{body}; #{"\n" * body.count("\n")}"
      else "\n" * body.count("\n")
      end
    end

    # Each line of text appended on its own source line.
    def text(body)
      return '' if body.empty?

      body.lines.map { |line| "#{@out}.<< #{line.inspect}.freeze#{line.end_with?("\n") ? "\n" : '; '}" }.join
    end
  end

  attr_reader :src
  attr_accessor :filename, :lineno

  def initialize(template, legacy_safe = nil, legacy_trim = nil, legacy_eoutvar = '_erbout', trim_mode: legacy_trim,
                 eoutvar: legacy_eoutvar)
    @template = template.to_s
    @src = Compiler.new(trim_mode, eoutvar).compile(@template)
    @lineno = 0
  end

  # Templates compiled when the bundle was built (Up::Node::Rewriters::ErbTemplates): text
  # => [the names the template reads freely, a block taking a Hash of those that are the
  # binding's locals].
  PRECOMPILED = {}

  def self.up_precompiled(text, names, &body)
    PRECOMPILED[text] = [names, body]
  end

  def encoding
    Encoding::UTF_8
  end

  # The template's output, its code run with binding's locals and self: the block compiled
  # at build time when there is one, else Opal's Kernel#eval with the Binding; in a new
  # object without a binding.
  def result(binding = nil)
    return ::Object.new.instance_eval(@src) unless binding

    names, body = PRECOMPILED[@template]
    return eval(@src, binding) unless body

    locals = names.select { |name| binding.local_variable_defined?(name) }
    binding.receiver.instance_exec(locals.to_h { |name| [name, binding.local_variable_get(name)] }, &body)
  end

  # The template's output, with hash's keys as the locals.
  def result_with_hash(hash)
    locals = hash.keys.map { |key| "#{key} = __up_locals[#{key.to_s.inspect}]; " }.join
    source = "->(__up_locals) { #{locals}#{@src} }"
    ::Object.new.instance_eval(source).call(hash.to_h { |key, value| [key.to_s, value] })
  end
end
