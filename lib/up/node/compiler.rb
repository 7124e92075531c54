# frozen_string_literal: true

require "digest"
require "opal/compiler"
require_relative "optional_requires"

module Up
  module Node
    # Opal's compiler with the steps UP! adds after Opal's own rewriting of a file's syntax
    # tree (Up::Node::Rewriters, each the compile-time half of a fix of an Opal gap; the
    # run-time halves are in opal/opal_fixes/). Up::Node::RubyProcessor makes one per file.
    #
    # It also tells Opal which requires may be missing (Up::Node::OptionalRequires), and
    # notes whether the file evaluates Ruby code in a String (string_eval?), which needs
    # Opal's parser at run time (Up::Node::OpalBuilder.parser).
    #
    # Opal's corelib, and what it loads, is left as Opal compiles it: it runs before those
    # run-time halves are loaded, and must agree with the runtime as Opal ships it
    # (Up::Node::OpalBuilder.build_prelude marks those files up_bootstrap).
    class Compiler < Opal::Compiler
      # The files that decide what this compiler outputs, besides Opal's.
      SOURCES = [__FILE__, File.join(__dir__, "optional_requires.rb"), File.join(__dir__, "rewriters.rb"),
                 *Dir[File.join(__dir__, "rewriters", "*.rb")]].sort.freeze

      # A short digest of SOURCES, part of the key of Opal's cache of compiled files.
      def self.digest
        @digest ||= Digest::SHA256.hexdigest(SOURCES.map { |file| File.read(file) }.join("\0"))[0, 16]
      end

      # Up::Node::Rewriters, in the order they run.
      def self.rewriters
        require_relative "rewriters"
        Rewriters::ALL
      end

      # What a compiler without a source map keeps in its place (Opal makes one when it has none).
      NO_SOURCE_MAP = {}.freeze

      # The methods that take Ruby code in a String.
      EVALS = %i[eval class_eval module_eval instance_eval].freeze

      attr_writer :abs_path

      def string_eval?
        @string_eval
      end

      # Opal's cache keeps a compiled file as the Marshal of its compiler, which names the
      # fields it keeps; string_eval? is one more. Opal makes the file's source map for it,
      # except for a file compiled with the option up_no_source_map (the parser file's, for
      # which no map is written: making them was a large part of a cold build).
      def marshal_dump
        @source_map ||= NO_SOURCE_MAP if @options[:up_no_source_map]
        [super, @string_eval]
      end

      def marshal_load(data)
        fields, @string_eval = data
        super(fields)
      end

      def parse
        super
        return if corelib? || @options[:up_bootstrap]

        @sexp = self.class.rewriters.reduce(@sexp) { |sexp, rewriter| rewriter.new.process(sexp) }
        @sexp = Rewriters::FileDir.new(File.dirname(@abs_path)).process(@sexp) if @abs_path
        autoloads.concat(OptionalRequires.new(file).find(@sexp))
        @string_eval = evaluates_string?(@sexp)
      end

      private

      # A call of one of EVALS with an argument that is not a block (Opal's own rewriting
      # has made a literal block an iter argument).
      def evaluates_string?(node)
        return false unless node.is_a?(::Parser::AST::Node)

        _receiver, name, *args = *node if node.type == :send
        return true if name && EVALS.include?(name) && args.any? { |arg| !%i[block_pass iter].include?(arg.type) }

        node.children.any? { |child| evaluates_string?(child) }
      end

      def corelib?
        @abs_path.to_s.start_with?("#{Opal.core_dir}/")
      end
    end
  end
end
