# frozen_string_literal: true

# Method visibility as Ruby code observes it: respond_to?, the *_method_defined? and
# *_instance_methods families, methods, public_send, private sections, module_function,
# aliases, redefinition, inheritance and modules, private_class_method, top-level defs.
module Helpers
  def shown; end

  private

  def hidden; end
end

class Base
  include Helpers

  def open_one; end

  private

  def secret; end
  define_method(:made) { 1 }
  attr_reader :reader
  alias also_secret secret
  alias_method :also_open, :open_one

  public

  def after_public; end

  protected def guarded; end

  private attr_accessor :pair

  def self.factory = new
  private_class_method :factory
end

class Base
  def reopened; end
  def secret; end # defined again in a public body: public now
end

class Child < Base
  public :made
  private :open_one

  def self.build = factory
end

module Tools
  module_function

  def tool = :tool
end

def top_helper; end

def names(list) = list.map(&:to_s).sort

p names(Base.private_instance_methods(false)), names(Base.public_instance_methods(false))
p names(Base.protected_instance_methods(false)), names(Base.instance_methods(false))
p names(Child.private_instance_methods(false)), names(Child.public_instance_methods(false))
p names(Base.private_instance_methods.grep(/secret|hidden|made|open_one/))
b = Base.new
c = Child.new
p b.respond_to?(:secret), b.respond_to?(:also_secret), b.respond_to?(:also_secret, true), b.respond_to?(:hidden)
p b.respond_to?(:shown), b.respond_to?(:made), c.respond_to?(:made), c.respond_to?(:open_one), b.respond_to?(:open_one)
p b.respond_to?(:guarded), b.respond_to?(:guarded, true), b.respond_to?(:pair), b.respond_to?(:pair=, true)
p Base.method_defined?(:made), Base.private_method_defined?(:made), Base.public_method_defined?(:open_one)
p Base.protected_method_defined?(:guarded), Base.method_defined?(:guarded), Child.private_method_defined?(:open_one)
p Base.private_method_defined?(:hidden), Base.private_method_defined?(:hidden, false), Helpers.private_method_defined?(:hidden)
p Base.respond_to?(:factory), Child.build.class.to_s, Tools.respond_to?(:tool), Tools.tool.to_s, names(Tools.private_instance_methods)
p names(b.methods.grep(/secret|open_one|shown|hidden/)), names(b.private_methods.grep(/secret|hidden/))
p names(b.public_methods.grep(/guarded|shown/))
p Object.private_method_defined?(:top_helper), 1.respond_to?(:top_helper), respond_to?(:top_helper, true)
begin
  b.public_send(:hidden)
rescue NoMethodError => e
  p e.message[/\A.*? method `hidden' called/]
end
p b.public_send(:open_one), b.send(:secret), b.__send__(:made)
begin
  Base.send(:private, :nope)
rescue NameError => e
  p e.class, e.message[/undefined method `nope' for class `Base'/]
end
p Base.send(:private, :secret).to_s, names(Base.send(:public, :secret, :made))
p Base.private_method_defined?(:secret), Base.public_method_defined?(:made)
# Roda's way to rebuild a hook: alias a private method, make it private, alias it to itself.
class Base
  alias_method :hook, :hidden
  private :hook
  alias_method :hook, :hook
end
p Base.private_method_defined?(:hook), Base.new.respond_to?(:hook)
