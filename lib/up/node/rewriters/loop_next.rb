# frozen_string_literal: true

require "opal/rewriters/base"

module Up
  module Node
    module Rewriters
      # `next value` in a while or until loop: the loop discards the value, but the
      # expression still runs. Opal compiled the `next` to a bare JS `continue` and dropped
      # the expression, so Sinatra's `next base = base.superclass unless args_array` in
      # Base#error_block! never moved on and the loop spun forever. This makes it
      # `value; next`. In a block, `next value` is the block's value and is left alone.
      class LoopNext < Opal::Rewriters::Base
        LOOPS = %i[while until while_post until_post].freeze
        SCOPES = %i[iter def defs class module sclass].freeze

        def initialize(*)
          super
          @in_loop = [false]
        end

        def process(node)
          return super unless node.is_a?(::Parser::AST::Node)

          inside = if LOOPS.include?(node.type) then true
                   elsif SCOPES.include?(node.type) then false
                   end
          return super if inside.nil?

          @in_loop.push(inside)
          begin
            super
          ensure
            @in_loop.pop
          end
        end

        def on_next(node)
          return super unless @in_loop.last && !node.children.empty?

          values = node.children.map { |child| process(child) }
          s(:begin, *values, node.updated(nil, []))
        end
      end
    end
  end
end
