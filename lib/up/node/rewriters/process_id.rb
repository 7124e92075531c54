# frozen_string_literal: true

require "opal/rewriters/base"

module Up
  module Node
    module Rewriters
      # `$$`, the pid, which Opal compiled as the JavaScript global `$$` (an unrelated
      # object), becomes Process.pid (opal/opal_fixes/process.rb makes that the real one).
      class ProcessId < Opal::Rewriters::Base
        def on_gvar(node)
          return super unless node.children.first.to_s == "$$"

          node.updated(:send, [s(:const, s(:cbase), :Process), :pid])
        end
      end
    end
  end
end
