# frozen_string_literal: true

require "opal/builder"
require_relative "compiler"
require_relative "rewriters/gem_patches"
require_relative "rewriters/erb_templates"

module Up
  module Node
    # Opal's processor for Ruby files, compiling with Up::Node::Compiler. Up::Node::OpalBuilder
    # puts it ahead of Opal's own, without registering it for everyone: a plain Opal build in
    # the same process is not changed.
    #
    # Opal caches a compiled file under a key made of the processor, the file's name on its
    # load path, its source and the options; the key here also names the version of our
    # compiler's rewriting, so that a file compiled before a change to it is compiled again,
    # and the file's absolute path, which its `__dir__` compiles to (Rewriters::FileDir): the
    # same config.ru in two directories is two files.
    class RubyProcessor < Opal::BuilderProcessors::RubyProcessor
      def self.match_regexp
        Opal::BuilderProcessors::RubyProcessor.match_regexp
      end

      def cache_key
        [*super, Compiler.digest, @abs_path]
      end

      # The compiler of a file, with the patches of an installed gem's file applied to its
      # source first (Rewriters::GemPatches), and its literal ERB templates compiled
      # (Rewriters::ErbTemplates).
      def compiler_for(source, options = {})
        source = Rewriters::ErbTemplates.apply(Rewriters::GemPatches.apply(@abs_path, source), @abs_path)
        Compiler.new(source, @options.merge(options)).tap { |compiler| compiler.abs_path = @abs_path }
      end
    end
  end
end
