# frozen_string_literal: true
# backtick_javascript: true

# Method#parameters and UnboundMethod#parameters always answer an Array, as in MRI. Opal
# records a method's parameters only when compiled with arity checks, and answered
# undefined (not even nil) otherwise, which no Ruby code can handle: Tilt's ERB engine asks
# `ERB.instance_method(:initialize).parameters.assoc(:key)` as it loads. Without the
# record, the answer is what MRI gives for a method whose parameters have no names (one
# written in C): [:req] for each required argument, then [:rest] if it takes more.
module Kernel
  def self.__up_parameters(body)
    %x{
      if (body.$$parameters) return body.$$parameters;
      var arity = body.$$arity == null ? body.length : body.$$arity, result = [], i;
      var required = arity < 0 ? -arity - 1 : arity;
      for (i = 0; i < required; i++) result.push(['req']);
      if (arity < 0) result.push(['rest']);
      return result;
    }
  end
end

class Method
  def parameters
    ::Kernel.__up_parameters(@method)
  end
end

class UnboundMethod
  def parameters
    ::Kernel.__up_parameters(@method)
  end
end
