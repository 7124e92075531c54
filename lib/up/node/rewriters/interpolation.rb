# frozen_string_literal: true

require "opal/rewriters/base"

module Up
  module Node
    module Rewriters
      # The compile-time half of keeping bytes through interpolation
      # (opal/opal_fixes/interpolation.rb): "a#{b}c" becomes Opal.up_dstr("a", b, "c"), a
      # JS call that concatenates as Opal's compiled interpolation does, and gives bytes
      # when a part holds bytes.
      class Interpolation < Opal::Rewriters::Base
        def on_dstr(node)
          node = super
          parts = node.children.map { |part| part.type == :begin && part.children.size == 1 ? part.children.first : part }
          s(:jscall, s(:js_tmp, "Opal"), :up_dstr, *parts)
        end
      end
    end
  end
end
