# frozen_string_literal: true

require "pathname"

module Up
  module Node
    # The requires of a file that MRI might never run, or whose LoadError the file itself
    # rescues: those in a method body (run when the method is called), those in a
    # `begin` whose `rescue` catches LoadError (ScriptError, Exception), and those in a
    # `rescue` clause (run only when something was raised). Opal resolves every
    # require when it compiles, so a missing file was a build error even there: Sinatra's
    # `begin require "rackup" rescue LoadError end`, rack-protection's optional
    # escape_utils, rackup's `require "objspace"` inside a method. Up::Node::Compiler hands
    # these to Opal as "autoloads", which a build may leave out when the file is missing:
    # the require then raises LoadError when it runs, as on MRI (opal/opal_fixes/require.rb
    # makes it raise each time). A missing file required anywhere else stays a build error.
    class OptionalRequires
      CATCHES_LOAD_ERROR = %i[LoadError ScriptError Exception].freeze

      # file: the name the file is compiled under (require_relative is resolved from it).
      def initialize(file)
        @file = file
      end

      # sexp: the file's syntax tree. Returns the require names, as Opal records them.
      def find(sexp)
        found = []
        walk(sexp, false, found)
        found.uniq
      end

      private

      def walk(node, optional, found)
        return unless node.is_a?(::Parser::AST::Node)

        case node.type
        when :def, :defs
          optional = true
        when :rescue
          body, *handlers = *node
          walk(body, optional || handlers.any? { |handler| catches_load_error?(handler) }, found)
          # A handler runs only when its body raised (Roda's public plugin requires
          # rack/file there when rack/files is missing).
          handlers.each { |handler| walk(handler, true, found) }
          return
        when :send
          found << name_of(node) if optional && require?(node)
        end
        node.children.each { |child| walk(child, optional, found) }
      end

      def catches_load_error?(handler)
        return false unless handler.is_a?(::Parser::AST::Node) && handler.type == :resbody

        classes = handler.children.first
        classes&.type == :array && classes.children.any? do |klass|
          klass.type == :const && (klass.children[0].nil? || klass.children[0].type == :cbase) &&
            CATCHES_LOAD_ERROR.include?(klass.children[1])
        end
      end

      def require?(node)
        receiver, name, argument = *node
        receiver.nil? && %i[require require_relative].include?(name) && argument&.type == :str
      end

      def name_of(node)
        _receiver, name, argument = *node
        path = argument.children.first
        return path if name == :require

        Pathname(File.dirname(@file)).join(path).cleanpath.to_s
      end
    end
  end
end
