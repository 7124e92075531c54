# frozen_string_literal: true

require "opal/rewriters/base"

module Up
  module Node
    module Rewriters
      # A test of RUBY_ENGINE against another engine's name (`if RUBY_ENGINE == "truffleruby"`)
      # is false on Opal, where RUBY_ENGINE is "opal": the branch that cannot run is left out,
      # with the files it requires. Opal's own step (Opal::Rewriters::OpalEngineCheck) does it
      # for the name "opal" only. The parser gem requires a second lexer (430 kB of Ruby) for
      # TruffleRuby so, which every app that evaluates a String compiled and carried.
      class EngineCheck < Opal::Rewriters::Base
        def on_if(node)
          test, if_true, if_false = *node
          case engine_test(test)
          when true then process(if_true || s(:nil))
          when false then process(if_false || s(:nil))
          else super
          end
        end

        private

        # true or false when test compares RUBY_ENGINE (either side) with == or != to a
        # literal name other than "opal"; else nil.
        def engine_test(test)
          return unless test.is_a?(::Parser::AST::Node) && test.type == :send

          left, operator, right = *test
          return unless %i[== !=].include?(operator)

          name = [[left, right], [right, left]].find { |engine, other| engine?(engine) && other&.type == :str }&.last
          return if name.nil? || name.children.first == "opal"

          operator == :!=
        end

        def engine?(node)
          node.is_a?(::Parser::AST::Node) && node.type == :const && node.children[1] == :RUBY_ENGINE &&
            (node.children[0].nil? || node.children[0].type == :cbase)
        end
      end
    end
  end
end
