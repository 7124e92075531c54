# frozen_string_literal: true

# Instance variables named like the properties every JavaScript function has, on a class
# (a JS function under Opal) and on an object, through every way Ruby reaches them.
NAMES = %w[name length prototype caller arguments].freeze

class Settings
  NAMES.each { |n| attr_accessor n }

  class << self
    NAMES.each { |n| attr_accessor n }
  end

  @name = "settings"
  @length = 3
  @prototype = nil
  @caller = "c"
  @arguments = [1]

  def self.ivars
    [@name, @length, @prototype, @caller, @arguments]
  end

  def initialize
    @name = "one"
    @length = 7
  end

  # Sinatra's pattern: the prototype of the app, kept in a class instance variable.
  def self.prototype!
    @prototype ||= new
  end
end

p Settings.ivars
p Settings.name, Settings.length
p Settings.instance_variables.map(&:to_s).sort
p Settings.new.class.to_s, Settings.prototype!.class.to_s, Settings.prototype!.equal?(Settings.prototype)
s = Settings.new
p [s.name, s.length, s.prototype]
s.prototype = "set by writer"
p s.instance_variable_get(:@prototype), s.instance_variable_defined?(:@caller)
Settings.instance_variable_set(:@name, "renamed")
p Settings.name, Settings.instance_variable_get("@name"), Settings.to_s
p Settings.instance_variables.map(&:to_s).sort == Settings.instance_variables.map(&:to_s).uniq.sort
m = Module.new
m.instance_variable_set(:@length, 10)
p m.instance_variable_get(:@length), m.instance_variables.map(&:to_s)
