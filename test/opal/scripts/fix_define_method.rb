# frozen_string_literal: true

# Methods made by define_method, as their bodies behave in MRI: self, arguments and a block
# argument, `return` and `break` ending the method, `super` under the method's name (also
# for one block defined under two names), Methods and UnboundMethods as bodies, arity, and
# a throw passing through on its way to its catch (Roda's route block).
class Base
  def greet(name) = "base #{name}"
  def other(name) = "other #{name}"
end

class Child < Base
  shared = proc { |name| "child #{super(name)}" }
  define_method(:greet, &shared)
  define_method(:other, &shared)
  define_method(:plain) { |a, b = 2, *rest| [self.class.name, a, b, rest] }
  define_method(:with_block) { |x, &blk| blk ? blk.call(x) : "no block" }
  define_method(:early) do |x|
    return "early" if x

    "late"
  end
  define_method(:nested_return) do |list|
    list.each { |item| return item if item > 1 }
    "none"
  end
  define_method(:halts) { throw :halt, "thrown" }
  define_method(:raises) { raise ArgumentError, "bad" }
  define_method(:from_method, instance_method(:plain))
  define_method("from_string") { "string name" }
end

child = Child.new
p child.greet("Ada"), child.other("Bob")
p child.plain(1), child.plain(1, 3, 4, 5)
p child.with_block(2) { |x| x * 10 }, child.with_block(2)
p child.early(true), child.early(false)
p catch(:halt) { child.halts; "not thrown" }
p(begin; child.raises; rescue ArgumentError => e; e.message; end)
p child.from_method(7), child.from_string
p Child.instance_method(:plain).arity, Child.instance_method(:with_block).arity, Child.instance_method(:halts).arity
p Child.public_method_defined?(:greet), child.respond_to?(:from_string)
lam = ->(x) { x + 1 }
Child.define_method(:from_lambda, &lam)
p child.from_lambda(1), lam.lambda?, lam.call(2)
p(begin; Child.define_method(:nothing); rescue ArgumentError => e; e.class; end)
p(begin; Child.define_method(:bad, Object.new); rescue TypeError => e; e.message; end)
p(begin; String.define_method(:bad, Child.instance_method(:plain)); rescue TypeError => e; e.message; end)
