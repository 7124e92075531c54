# frozen_string_literal: true

# Ruby code in a String, as Sinatra defines its settings and Tilt its templates: Opal's
# parser is loaded on the first such eval (its own file beside the bundle), and the code
# is compiled as the bundle's files are (instance variables, visibility).
class Settings
  @name = "settings"

  def initialize
    @name = "one"
  end

  { "port" => 4567, "bind" => "0.0.0.0", "logging" => nil, "static" => true }.each do |key, value|
    class_eval("def #{key}() #{value.inspect}; end")
    class_eval("def #{key}?() !!#{key}; end")
  end

  module_eval(<<~RUBY, __FILE__, __LINE__ + 1)
    def described = "\#{@name} on \#{bind}:\#{port}"

    private

    def secret = :secret
  RUBY
end

s = Settings.new
p s.port, s.bind, s.logging, s.static?, s.logging?, s.described
p Settings.private_method_defined?(:secret), s.respond_to?(:port), s.respond_to?(:secret)
p s.instance_eval("@name"), s.instance_eval("@name.upcase + port.to_s"), Settings.instance_eval("@name")
p eval("[1, 2, 3].sum * 2"), Kernel.eval("'a' * 3")
c = Class.new
c.class_eval("attr_accessor :length; def initialize = @length = 4")
p c.new.length, c.new.instance_variables.map(&:to_s)

# Methods that return a literal, as Sinatra defines its settings.
Literal = Class.new
{ "a" => "x\"y\\z\n#{1}", "b" => :sym, "c" => -42, "d" => nil, "e" => true, "f" => false, "g" => "é", "h" => 1.5 }.each do |name, value|
  Literal.class_eval("def #{name}() #{value.inspect}; end")
end
l = Literal.new
p [l.a, l.b.to_s, l.c, l.d, l.e, l.f, l.g, l.h], Literal.instance_method(:c).arity
