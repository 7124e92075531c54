# frozen_string_literal: true

# `super` keeps finding the method MRI finds while the methods and ancestors it passes
# change between calls: a method defined, removed or undefined further up, a module
# included or prepended, an object extended or given a singleton method, a Hash subclass
# (Rack::Headers), define_method and blocks, and a super with no method above it.
class Base
  def name = "base"
  def size_of(list) = list.size
end

class Child < Base
  def name = "child<#{super}>"
  def size_of(list) = super(list) + 1
end

child = Child.new
p child.name
p child.name

# A method defined again above the caller.
class Base
  def name = "base again"
end
p child.name

# A module included between the caller and the method it found.
module Middle
  def name = "middle<#{super}>"
end
Child.include(Middle)
p child.name

# The module's method removed, then its name undefined there.
Middle.send(:remove_method, :name)
p child.name
module Middle
  def name = "middle back<#{super}>"
end
p child.name
Middle.send(:undef_method, :name)
begin
  p child.name
rescue NoMethodError => e
  p [e.class, e.name.to_s]
end

# A prepended module over another class, calling super into the class.
class Other
  def name = "other"
end
module Wrapper
  def name = "wrapped<#{super}>"
end
Other.prepend(Wrapper)
p Other.new.name

# One object extended, another given a singleton method; the class's other objects keep
# the class's chain.
class Plain
  def greet = "plain"
end
module Loud
  def greet = "loud<#{super}>"
end
first = Plain.new
second = Plain.new
p first.greet
first.extend(Loud)
p first.greet
p second.greet
def second.greet = "single<#{super}>"
p second.greet
p Plain.new.greet

# A Hash subclass calling super in its accessors, as Rack::Headers does.
class Fields < Hash
  def []=(key, value)
    super(key.downcase, value)
  end

  def [](key)
    super(key.downcase)
  end

  def fetch(key, *rest, &block)
    super(key.downcase, *rest, &block)
  end
end
fields = Fields.new
3.times { |i| fields["X-Count"] = i }
p [fields["x-COUNT"], fields.fetch("X-Missing", "default"), fields.fetch("X-Missing") { |k| "block #{k}" }]

# The same method reached through two subclasses, alternately.
class Left < Base
  def name = "left<#{super}>"
end
class Right < Left; end
class Far < Right
  def name = "far<#{super}>"
end
p [Left.new.name, Far.new.name, Left.new.name, Far.new.name]

# super from define_method and from a block inside a method.
class Defined < Base
  define_method(:name) { "defined<#{super()}>" }
  def size_of(list)
    [list].map { |l| super(l) * 10 }.first
  end
end
p [Defined.new.name, Defined.new.name, Defined.new.size_of([1, 2])]

# Class methods (the singleton classes' chain), and a class method added later.
class Parent
  def self.kind = "parent"
end
class Kid < Parent
  def self.kind = "kid<#{super}>"
end
p Kid.kind
class Parent
  def self.kind = "parent again"
end
p Kid.kind

# super with nothing above it, twice, then with a method there.
class Lonely
  def alone = super
end
2.times do
  Lonely.new.alone
rescue NoMethodError => e
  p [e.class, e.name.to_s]
end
class Object
  def alone = "object's"
end
p Lonely.new.alone

# method_missing above takes a super with no method.
class Catcher
  def method_missing(name, *args) = name == :alone2 ? "missing #{name}" : super
  def respond_to_missing?(name, include_all = false) = name == :alone2 || super
end
class Thrower < Catcher
  def alone2 = super
end
p [Thrower.new.alone2, Thrower.new.alone2]
