# frozen_string_literal: true

# Module#const_defined? with a "A::B::C" path (Mustermann looks up its node classes so).
module Outer
  module Inner
    class Leaf; end
    VALUE = 1
  end
  class Sub < Outer::Inner::Leaf; end
end

module Mixin
  NESTED = 2
end

class Host
  include Mixin
end

p Object.const_defined?("Outer::Inner::Leaf"), Object.const_defined?("::Outer::Inner")
p Outer.const_defined?("Inner::VALUE"), Object.const_defined?("Outer::Nope::Leaf")
p Object.const_defined?("Outer::Inner::Nope"), Object.const_defined?("Outer::Inner::Leaf", false)
p Host.const_defined?("Mixin::NESTED"), Host.const_defined?("NESTED"), Host.const_defined?("NESTED", false)
# After the first name, Object's constants are not looked at.
p Outer.const_defined?("String::Comparable"), Outer.const_defined?("Inner::String")
p Outer.const_defined?("String"), Object.const_defined?("Outer::Sub::Leaf")
begin
  Object.const_defined?("Outer::Inner::VALUE::X")
rescue TypeError => e
  p e.class, e.message
end
begin
  Object.const_defined?("Outer::inner")
rescue NameError => e
  p e.class, e.message.lines.first.chomp
end
