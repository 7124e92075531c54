# frozen_string_literal: true
# backtick_javascript: true

# define_method makes the method's body a plain function around the block, where Opal 1.8
# wraps the block in a JS Proxy whose apply trap catches and re-throws everything the body
# throws. A Proxy call is V8's slow path, and each re-throw is a second unwinding of the
# stack: Roda's route block is such a method, and every request leaves it through
# `throw :halt`.
#
# What the body must do for the block is Opal's: the block runs with its self the receiver,
# as a lambda, under the method's name (for `super`), and a `break` or `return` written
# directly in it ends the method with its value. Only a block that has such a `break` or
# `return` (Opal gives it $$brk or $$ret) needs the lambda flag, and so the catch; one that
# has neither runs directly, its name and def already set once, as Opal sets them through
# its Proxy. A block defined as two methods takes each call's name and def for that call.
%x{
  Opal.up_method_body = function(block, name) {
    var body = function() {
      var block_arg = body.$$p;
      if (block_arg != null) {
        body.$$p = null;
        block.$$p = block_arg;
      }
      if (block.$$def === body && block.$$brk == null && block.$$ret == null) return block.apply(this, arguments);

      var old_name = block.$$jsid, old_lambda = block.$$is_lambda, old_def = block.$$def;
      block.$$jsid = name;
      block.$$is_lambda = true;
      block.$$def = body;
      try {
        return block.apply(this, arguments);
      } catch (error) {
        if (error === block.$$brk || error === block.$$ret) return error.$v;
        throw error;
      } finally {
        block.$$jsid = old_name;
        block.$$is_lambda = old_lambda;
        block.$$def = old_def;
      }
    };
    Object.defineProperty(body, 'length', { value: block.length });
    body.$$arity = block.$$arity == null ? block.length : block.$$arity;
    body.$$parameters = block.$$parameters;
    body.$$source_location = block.$$source_location;
    body.$$is_lambda = block.$$is_lambda;
    body.$$brk = block.$$brk;
    body.$$ret = block.$$ret;
    body.$$jsid = block.$$jsid = name;
    body.$$s = block.$$s = null;
    body.$$def = block.$$def = body;
    body.$$define_meth = block.$$define_meth = true;
    return body;
  };
}

class Module
  def define_method(name, method = `undefined`, &block)
    `Opal.deny_frozen_access(self)`
    ::Kernel.raise ::ArgumentError, 'tried to create a Proc object without a block' if `method === undefined && block === nil`

    name = ::Kernel.__up_method_name(name)
    block = ::Kernel.__up_method_block(self, method) unless `method === undefined`
    `Opal.defn(self, Opal.jsid(name), Opal.up_method_body(block, name))`
  end
end

module Kernel
  # A name as define_method takes it: a Symbol or String, or what to_str makes a String.
  def self.__up_method_name(name)
    return name if name.is_a?(::String)

    converted = ::Opal.try_convert(name, ::String, :to_str)
    return converted if converted.is_a?(::String)

    ::Kernel.raise ::TypeError, "#{name} is not a symbol nor a string" if converted.nil?
    ::Kernel.raise ::TypeError, "can't convert #{name.class} to String (#{name.class}#to_str gives #{converted.class})"
  end

  # The function a Proc, Method or UnboundMethod given to define_method runs as the body; a
  # method of another class binds to mod only if mod descends from its owner.
  def self.__up_method_block(mod, method)
    return method if method.is_a?(::Proc)

    body = case method
           when ::Method then `#{method.to_proc}.$$unbound`
           when ::UnboundMethod then `Opal.wrap_method_body(#{method}.$$method)`
           else ::Kernel.raise ::TypeError, "wrong argument type #{method.class} (expected Proc/Method/UnboundMethod)"
           end
    owner = method.owner
    if `owner.$$is_class` && !(mod <= owner)
      ::Kernel.raise ::TypeError, `owner.$$is_singleton` ? "can't bind singleton method to a different class" : "bind argument must be a subclass of #{owner}"
    end
    body
  end
end
