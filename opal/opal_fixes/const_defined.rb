# frozen_string_literal: true

# Module#const_defined? with a path ("Mustermann::AST::Node::Root"), which MRI accepts in a
# String. Opal's checked the whole string as one name and answered false, so Mustermann
# found none of its node classes. As in MRI, the first name is looked up as a plain
# const_defined? would (with Object for a module), the later ones in each module and its
# ancestors but not Object's, and a name on the way that is not a module is a TypeError that names the whole path.
class Module
  alias __opal_const_defined? const_defined?

  def const_defined?(name, inherit = true)
    path = ::Opal.const_name!(name)
    return __opal_const_defined?(path, inherit) unless path.include?('::')

    mod = self
    if path.start_with?('::')
      mod = ::Object
      path = path[2..]
    end
    names = path.split('::', -1)
    names.each_with_index do |const, index|
      found = index.zero? ? mod.__opal_const_defined?(const, inherit) : mod.__up_const_defined_from?(const, inherit)
      return false unless found
      return true if index == names.size - 1

      mod = mod.const_get(const, inherit)
      unless ::Module === mod
        ::Kernel.raise ::TypeError, "#{name} does not refer to class/module"
      end
    end
  end

  # A name after the first in a path: this module's own, its ancestors' but not Object's
  # (nor those of Object's ancestors) unless this is Object.
  def __up_const_defined_from?(const, inherit)
    return __opal_const_defined?(const, false) unless inherit
    return __opal_const_defined?(const, true) if equal?(::Object)

    object_ancestors = ::Object.ancestors
    ancestors.any? { |mod| !object_ancestors.include?(mod) && mod.__opal_const_defined?(const, false) }
  end
end
