# frozen_string_literal: true

# `next value` in a while/until loop still evaluates value (Sinatra's error_block! moves
# up the class chain so); in a block it is the block's value.
class Grand
  def self.errors = { "boom" => "grand" }
end

class Parent < Grand
  def self.errors = {}
end

class Child < Parent
  def self.errors = {}
end

base = Child
found = nil
while base.respond_to?(:errors)
  found = base.errors["boom"]
  next base = base.superclass unless found

  break
end
p found, base.to_s

i = 0
seen = []
until i >= 5
  next i += 1 if i.even?

  seen << i
  i += 1
end
p seen, i

p [1, 2, 3].map { |x| next x * 10 if x.odd?; x }
p(loop_total = [1, 2].sum { |x| next 100 if x == 2; x })
