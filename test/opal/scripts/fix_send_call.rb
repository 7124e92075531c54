# frozen_string_literal: true

# Calls that pass a block, call super or go through an alias, with none to many arguments,
# splats, optional and keyword arguments, a block argument, and method_missing.
class Caller
  def take(*args, &block) = [args, block ? block.call(args.size) : "no block"]
  def two(a, b, &block) = [a, b, block&.call]
  def opt(a, b = 2, *rest, c:, d: 4, &block) = [a, b, rest, c, d, block&.call]
  alias taken take
  alias two_alias two

  def method_missing(name, *args, &block)
    return super unless name.to_s.start_with?("ghost")

    [name.to_s, args, block ? block.call : nil]
  end

  def respond_to_missing?(name, include_all = false) = name.to_s.start_with?("ghost") || super
end

c = Caller.new
list = [1, 2, 3, 4, 5, 6]
(0..6).each do |n|
  args = list.first(n)
  p c.take(*args) { |size| "block saw #{size}" }
  p c.taken(*args) { |size| "alias saw #{size}" }
  p c.public_send(:take, *args) { |size| "send saw #{size}" }
  p c.ghost_call(*args) { "ghost block" }
end
p c.two(1, 2) { "b" }, c.two_alias(3, 4) { "a" }, c.opt(1, c: 3) { "k" }, c.opt(1, 9, 8, 7, c: 3, d: 5) { "k" }
p [c.method(:take).call(1, 2) { |n| n }, c.method(:two).to_proc.call(5, 6), [[1, 2]].map { |a, b| c.two(a, b) { a + b } }]
begin
  c.vanished(1, 2) { "none" }
rescue NoMethodError => e
  p [e.class, e.name.to_s]
end

class Child < Caller
  def take(*args, &block) = ["child", *super]
  def two(a, b) = ["child two", super(a, b) { "from child" }, super]
end
p Child.new.take(1, 2, 3) { |n| n * 10 }, Child.new.two(7, 8), Child.new.taken(1, 2, 3, 4, 5) { |n| n }
p [[1, 2], [3, 4]].each_with_object([]) { |(a, b), acc| acc << a * b }, { a: 1 }.map { |k, v| [k.to_s, v] }
