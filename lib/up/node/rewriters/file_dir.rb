# frozen_string_literal: true

require "opal/rewriters/base"

module Up
  module Node
    module Rewriters
      # `__dir__`, which Opal compiles as the directory of the file's name on its load path
      # ("." for config.ru, so relative to wherever the server runs), becomes the file's
      # absolute directory, as on MRI: an app that reads the files beside its own
      # (`File.join(__dir__, "page", name)`) finds them from any working directory. Made by
      # Up::Node::Compiler with the directory of the file it compiles. A require's argument
      # keeps Opal's `__dir__`: Opal resolves those requires at compile time by that name.
      class FileDir < Opal::Rewriters::Base
        REQUIRES = %i[require require_relative require_tree autoload].freeze

        def initialize(dir)
          super()
          @dir = dir
        end

        def on_send(node)
          receiver, name, *args = *node
          return node if receiver.nil? && REQUIRES.include?(name)
          return node.updated(:str, [@dir]) if receiver.nil? && name == :__dir__ && args.empty?

          super
        end
      end
    end
  end
end
