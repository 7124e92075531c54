# frozen_string_literal: true

require "opal/rewriters/base"

module Up
  module Node
    module Rewriters
      # The default visibility of a class or module body: after `private` (`protected`,
      # `module_function`) without arguments, the methods the body goes on to define are
      # private, until `public`. Opal ignored it. This keeps it where MRI keeps it, in the
      # scope of the body: each method defined there (`def`, `define_method`,
      # `attr_reader`...) is wrapped in `private(...)` with its name, which
      # opal/opal_fixes/visibility.rb records. Top-level methods are private, as in MRI. A
      # block (`Class.new do ... end`, `class_eval do ... end`) is a scope of its own.
      class Visibility < Opal::Rewriters::Base
        DEFAULTS = { private: :private, protected: :protected, module_function: :private, public: nil }.freeze
        DEFINERS = %i[define_method attr_reader attr_writer attr_accessor attr].freeze

        def on_top(node)
          super(node.updated(nil, [in_scope(node.children.first, top_level)]))
        end

        def on_class(node)
          name, superclass, body = *node
          super(node.updated(nil, [name, superclass, in_scope(body)]))
        end

        def on_module(node)
          name, body = *node
          super(node.updated(nil, [name, in_scope(body)]))
        end

        def on_sclass(node)
          object, body = *node
          super(node.updated(nil, [object, in_scope(body)]))
        end

        # Opal's own rewriting has turned each block into an iter: (iter args body).
        def on_iter(node)
          args, body = *node
          super(node.updated(nil, [args, in_scope(body)]))
        end

        # For code evaluated from a String: its top level is the class body or object it is
        # evaluated in, where definitions start public.
        class InEval < Visibility
          private

          def top_level
            nil
          end
        end

        private

        # The visibility a file's top level starts with: its methods are Object's private ones.
        def top_level
          :private
        end

        # body with each definition after a default-visibility call wrapped; default is
        # the visibility the scope starts with (nil: public).
        def in_scope(body, default = nil)
          return body if body.nil?

          statements = body.type == :begin ? body.children : [body]
          visibility = default
          rewritten = statements.map do |statement|
            if DEFAULTS.key?(change = visibility_change(statement))
              visibility = DEFAULTS[change]
              statement
            else
              visibility ? wrapped(statement, visibility) : statement
            end
          end
          return body if rewritten == statements

          body.type == :begin ? body.updated(nil, rewritten) : rewritten.first
        end

        def visibility_change(node)
          return unless node.is_a?(::Parser::AST::Node) && node.type == :send

          receiver, name, *args = *node
          name if receiver.nil? && args.empty? && DEFAULTS.key?(name)
        end

        def wrapped(node, visibility)
          return node unless definition?(node)

          node.updated(:send, [nil, visibility, node])
        end

        def definition?(node)
          return false unless node.is_a?(::Parser::AST::Node)
          return true if node.type == :def

          node.type == :send && node.children[0].nil? && DEFINERS.include?(node.children[1])
        end
      end
    end
  end
end
