# frozen_string_literal: true

require "opal/rewriters/base"

module Up
  module Node
    module Rewriters
      # Opal keeps an instance variable as a JavaScript property of the same name, and a class
      # or module is a JavaScript function, whose own properties `name`, `length` and
      # `prototype` are not free: `@name` on a class read back "klass", and `@prototype = nil`
      # on a class replaced the prototype its instances are made from (Sinatra's
      # `@prototype ||= new` made every app object a NilClass). Opal already renames a few
      # names this way (`@constructor` is kept as `constructor$`); this renames the function
      # properties too, everywhere, so an object and its class agree. The run-time half
      # (instance_variable_get, attr_reader, ...) is opal/opal_fixes/ivar_names.rb, which
      # must list the same names.
      class IvarNames < Opal::Rewriters::Base
        FUNCTION_PROPERTIES = %w[name length prototype caller arguments].freeze

        def on_ivar(node)
          super(rename(node))
        end

        def on_ivasgn(node)
          super(rename(node))
        end

        private

        def rename(node)
          name, *rest = *node
          return node unless FUNCTION_PROPERTIES.include?(name.to_s.delete_prefix("@"))

          node.updated(nil, [:"#{name}$", *rest])
        end
      end
    end
  end
end
