# frozen_string_literal: true

require 'forwardable'

# Forwardable's accessor is Ruby code in MRI, evaluated in the object: a method name (even
# a private one), an instance variable, or an expression such as 'self.class'. Opal's
# stdlib sent any accessor not starting with "@" as a method name, so Mustermann's
# `instance_delegate %i[parser compiler] => 'self.class'` called a method named
# "self.class". Here an accessor is read once, when the delegator is defined, into a
# lambda that finds the target: a chain of method calls from self, an instance variable or
# a constant path. Anything else (arguments, operators) is evaluated with instance_eval,
# which needs Opal's parser.
module Forwardable
  ACCESSOR_HEAD = /\A(?:self|@[A-Za-z_]\w*|(?:::)?[A-Z]\w*(?:::[A-Z]\w*)*|[a-z_]\w*[?!]?)\z/
  ACCESSOR_CALL = /\A[A-Za-z_]\w*[?!]?\z/

  # A lambda that takes the object and returns what the accessor names in it.
  def self.__up_accessor(accessor)
    code = accessor.to_s
    head, *calls = code.split('.')
    unless head && head.match?(ACCESSOR_HEAD) && calls.all? { |call| call.match?(ACCESSOR_CALL) }
      return ->(obj) { obj.instance_eval(code) }
    end

    first = if head == 'self'
              ->(obj) { obj }
            elsif head.start_with?('@')
              ->(obj) { obj.instance_variable_get(head) }
            elsif head.match?(/\A(?:::)?[A-Z]/)
              ->(obj) { (::Module === obj ? obj : obj.class).const_get(head.delete_prefix('::')) }
            else
              ->(obj) { obj.__send__(head) }
            end
    return first if calls.empty?

    ->(obj) { calls.reduce(first.call(obj)) { |target, call| target.__send__(call) } }
  end

  def def_instance_delegator(accessor, method, ali = method)
    target = Forwardable.__up_accessor(accessor)
    define_method(ali) { |*args, &block| target.call(self).__send__(method, *args, &block) }
    ali
  end

  alias def_delegator def_instance_delegator
end

module SingleForwardable
  def def_single_delegator(accessor, method, ali = method)
    target = Forwardable.__up_accessor(accessor)
    define_singleton_method(ali) { |*args, &block| target.call(self).__send__(method, *args, &block) }
    ali
  end

  alias def_delegator def_single_delegator
end
