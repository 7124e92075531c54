# frozen_string_literal: true

require "erb"
require "parser/ruby32"

module Up
  module Node
    module Rewriters
      # ERB templates compiled when the app is built, so that `erb.result(binding)` needs no
      # Ruby compiler at run time. Rack's and Sinatra's error pages (Rack::ShowExceptions,
      # Rack::ShowStatus, Sinatra::ShowExceptions) keep their template in the gem's file,
      # as `ERB.new(<literal>)`, and render it with the locals of the method that calls
      # `result(binding)`; on Opal that evaluation needs Opal's parser (2.4 MB, and only
      # Sinatra apps carry it). This step reads each `ERB.new` of a literal text (a heredoc,
      # maybe `.gsub` of literals, or a constant of the same file holding one), compiles the
      # text with MRI's ERB at build time, and appends to the file, in the same
      # class nesting, a block of that Ruby that reads the template's free names (`req`)
      # from the binding's locals, or calls them as methods where the binding has no such
      # local, as Ruby would:
      #
      #   ERB.up_precompiled(text, %w[req path]) { |__up_locals| ...compiled template... }
      #
      # opal/erb.rb keeps it under the text, and ERB#result(binding) runs it with the
      # binding's self and those of its locals. The template stays the gem's own text, read from the installed
      # gem each build. Up::Node::RubyProcessor applies this to every file it compiles.
      module ErbTemplates
        module_function

        # source of a file, with its literal ERB templates compiled, each inserted after the
        # top-level statement that holds it (so that it is registered before code after
        # that statement renders it; lines after that statement move down).
        def apply(source, file)
          return source unless source.include?("ERB.new")

          ast = parse(source, file) or return source
          constants = literal_constants(ast)
          rewriter = ::Parser::Source::TreeRewriter.new(ast.loc.expression.source_buffer)
          statements = ast.type == :begin ? ast.children : [ast]
          statements.each do |statement|
            blocks = []
            each_erb_new(statement, []) do |arg, nesting|
              text = literal(arg, constants)
              blocks << compiled(text, nesting) if text
            end
            next if blocks.empty?

            rewriter.insert_after(::Parser::Source::Range.new(rewriter.source_buffer, 0, last_pos(statement)), "\n#{blocks.join}")
          end
          rewriter.process
        end

        # Where node's text ends, the bodies of its heredocs included.
        def last_pos(node)
          return 0 unless node.is_a?(::Parser::AST::Node)

          ends = [node.loc.expression&.end_pos.to_i]
          ends << node.loc.heredoc_end.end_pos if node.loc.respond_to?(:heredoc_end)
          [*ends, *node.children.map { |child| last_pos(child) }].max
        end

        def parse(source, file)
          buffer = ::Parser::Source::Buffer.new(file.to_s, source: source)
          parser = ::Parser::Ruby32.new
          parser.diagnostics.all_errors_are_fatal = true
          parser.diagnostics.ignore_warnings = true
          parser.parse(buffer)
        rescue ::Parser::SyntaxError
          nil
        end

        # NAME => text, for each `NAME = <literal>` of the file.
        def literal_constants(node, found = {})
          return found unless node.is_a?(::Parser::AST::Node)

          if node.type == :casgn && node.children[0].nil? && node.children[2]
            text = literal(node.children[2], found)
            found[node.children[1]] = text if text
          end
          node.children.each { |child| literal_constants(child, found) }
          found
        end

        # Yields the argument of each `ERB.new(arg)` and the [keyword, name] of the modules
        # and classes around it.
        def each_erb_new(node, nesting, &block)
          return unless node.is_a?(::Parser::AST::Node)

          if node.type == :send && node.children[0] == s(:const, nil, :ERB) && node.children[1] == :new &&
             node.children.size == 3
            yield node.children[2], nesting
          end
          if %i[module class].include?(node.type)
            name = node.children[0]
            return unless name.type == :const

            nesting += [[node.type, name.loc.expression.source]]
          end
          node.children.each { |child| each_erb_new(child, nesting, &block) }
        end

        # The String a literal node stands for (str, a dstr of strs, `.gsub`/`.sub` of literals,
        # `.freeze`/`.dup`/`.chomp`/`.strip`, a constant in constants), or nil.
        def literal(node, constants)
          return unless node.is_a?(::Parser::AST::Node)

          case node.type
          when :str then node.children[0]
          when :dstr then node.children.map { |part| literal(part, constants) || (return nil) }.join
          when :const then node.children[0].nil? ? constants[node.children[1]] : nil
          when :begin then node.children.size == 1 ? literal(node.children[0], constants) : nil
          when :send then literal_call(node, constants)
          end
        end

        def literal_call(node, constants)
          receiver, name, *args = *node
          text = literal(receiver, constants) or return
          case name
          when :freeze, :dup, :chomp, :strip, :+@ then args.empty? ? text.public_send(name) : nil
          when :gsub, :sub
            return unless args.size == 2

            pattern = regexp(args[0]) || literal(args[0], constants)
            replacement = literal(args[1], constants)
            text.public_send(name, pattern, replacement) if pattern && replacement
          end
        end

        def regexp(node)
          return unless node&.type == :regexp

          *parts, options = *node
          return unless parts.all? { |part| part.type == :str }

          flags = options.children.sum { |flag| { i: Regexp::IGNORECASE, x: Regexp::EXTENDED, m: Regexp::MULTILINE }.fetch(flag, 0) }
          Regexp.new(parts.map { |part| part.children[0] }.join, flags)
        end

        # The Ruby that registers text's compiled template, inside nesting.
        def compiled(text, nesting)
          src, names = with_locals(ERB.new(text).src)
          body = "ERB.up_precompiled(#{text.inspect}, #{names.map(&:to_s).inspect}) do |__up_locals|\n#{src}\nend\n"
          nesting.reverse.reduce(body) { |inner, (keyword, name)| "#{keyword} #{name}\n#{inner}end\n" }
        end

        # The template's Ruby with each name it reads freely (`name` alone, which Ruby reads
        # as a local variable of the binding or else as a call of a method of its self)
        # read from the Hash __up_locals when the binding had such a local, else called;
        # and those names.
        def with_locals(src)
          buffer = ::Parser::Source::Buffer.new("(erb)", source: src)
          rewriter = ::Parser::Source::TreeRewriter.new(buffer)
          names = []
          each_free_name(::Parser::Ruby32.new.parse(buffer)) do |node, name|
            names << name
            rewriter.replace(node.loc.expression, "(__up_locals.key?(#{name.to_s.inspect}) ? __up_locals[#{name.to_s.inspect}] : #{name}())")
          end
          [rewriter.process, names.uniq]
        end

        def each_free_name(node, &block)
          return unless node.is_a?(::Parser::AST::Node)

          if node.type == :send && node.children[0].nil? && node.children.size == 2 && node.loc.selector &&
             node.loc.expression == node.loc.selector && node.children[1].match?(/\A[a-z_]\w*\z/)
            yield node, node.children[1]
          end
          node.children.each { |child| each_free_name(child, &block) }
        end

        def s(type, *children)
          ::Parser::AST::Node.new(type, children)
        end
      end
    end
  end
end
