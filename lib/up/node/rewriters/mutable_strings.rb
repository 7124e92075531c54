# frozen_string_literal: true

require "opal/rewriters/base"

module Up
  module Node
    module Rewriters
      # The compile-time half of changing Strings in place (opal/opal_fixes/mutable_strings.rb):
      # a call of a method that changes a String, on a receiver that can be assigned (a
      # variable, an attribute with a writer, a Hash entry), becomes
      #
      #   buf.__up_string? ? (t = buf.__up_mutate(:<<, x); buf = t[0]; t[1]) : buf << x
      #
      # so that the variable holds the changed string and the expression has MRI's value,
      # while an Array or any other receiver gets the call as written. A chain of appends
      # (`buf << a << b`) is one such test. Receivers that cannot be assigned (a method's
      # result) are left alone: their methods return MRI's value without changing them.
      class MutableStrings < Opal::Rewriters::Base
        # Methods that return the changed string itself, so a chain of them changes one.
        RETURNING_SELF = %i[<< concat prepend insert replace clear].freeze
        MUTATORS = (RETURNING_SELF + %i[
          slice! capitalize! chomp! chop! downcase! gsub! lstrip! next! reverse! rstrip! squeeze! strip! sub!
          succ! swapcase! tr! tr_s! upcase! delete! delete_prefix! delete_suffix! unicode_normalize! encode! scrub!
          force_encoding
        ]).freeze
        VARIABLES = { lvar: :lvasgn, ivar: :ivasgn, gvar: :gvasgn, cvar: :cvasgn }.freeze
        # What may be evaluated more than once without harm: a Hash entry's receiver and key.
        PLAIN = %i[self lvar ivar gvar cvar const str sym int].freeze
        # Receivers of an attribute (a reader without arguments) whose writer gets the change.
        OWNERS = %i[self lvar ivar].freeze
        TEMP = :__up_mutated

        def on_send(node)
          receiver, name, *args = *node
          return super unless MUTATORS.include?(name)

          chain = appends(node) if RETURNING_SELF.include?(name)
          return rewrite_chain(*chain) if chain
          return super unless assignable?(receiver)

          rewrite_one(receiver, name, args.map { |arg| process(arg) })
        end

        private

        # [base, [[name, args], ...]] when node is a chain of RETURNING_SELF calls on an
        # assignable base (innermost first), else nil.
        def appends(node)
          calls = []
          while node.is_a?(::Parser::AST::Node) && node.type == :send && RETURNING_SELF.include?(node.children[1])
            receiver, name, *args = *node
            calls.unshift([name, args])
            node = receiver
          end
          [node, calls] if assignable?(node)
        end

        # base.__up_string? ? (t = base.__up_mutate(:<<, a)[0]; base = t; ...; t) : base << a << ...
        # (each change is stored before the next argument is evaluated, as in MRI).
        def rewrite_chain(base, calls)
          calls = calls.map { |name, args| [name, args.map { |arg| process(arg) }] }
          temp = s(:lvar, TEMP)
          changes = calls.each_with_index.flat_map do |(name, args), index|
            from = index.zero? ? base : temp
            [s(:lvasgn, TEMP, s(:send, s(:send, from, :__up_mutate, s(:sym, name), *args), :[], s(:int, 0))),
             assign(base, temp)]
          end
          plain = calls.reduce(base) { |receiver, (name, args)| s(:send, receiver, name, *args) }
          s(:if, s(:send, base, :__up_string?), s(:begin, *changes, temp), plain)
        end

        def rewrite_one(receiver, name, args)
          changed = s(:begin,
                      s(:lvasgn, TEMP, s(:send, receiver, :__up_mutate, s(:sym, name), *args)),
                      assign(receiver, s(:send, s(:lvar, TEMP), :[], s(:int, 0))),
                      s(:send, s(:lvar, TEMP), :[], s(:int, 1)))
          s(:if, s(:send, receiver, :__up_string?), changed, s(:send, receiver, name, *args))
        end

        def assignable?(node)
          return false unless node.is_a?(::Parser::AST::Node)
          return true if VARIABLES.key?(node.type)
          return false unless node.type == :send

          receiver, name, *args = *node
          if name == :[]
            receiver && PLAIN.include?(receiver.type) && args.size == 1 && PLAIN.include?(args.first.type)
          else
            (receiver.nil? || OWNERS.include?(receiver.type)) && args.empty? && name.match?(/\A[a-z_]\w*\z/)
          end
        end

        # target = value, for what assignable? accepts. An attribute without a writer is
        # left as it is (the value is still the changed string).
        def assign(target, value)
          return s(VARIABLES.fetch(target.type), target.children.first, value) if VARIABLES.key?(target.type)

          receiver, name, *args = *target
          return s(:send, receiver, :[]=, *args, value) if name == :[]

          writer = :"#{name}="
          s(:if, s(:send, receiver || s(:self), :respond_to?, s(:sym, writer), s(:true)),
            s(:send, receiver, writer, value), value)
        end
      end
    end
  end
end
