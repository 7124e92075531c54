# frozen_string_literal: true

# Forwardable and SingleForwardable with each kind of accessor MRI takes: a method name
# (private too), an instance variable, and a Ruby expression ('self.class', a chain, a
# constant path), as Mustermann's `instance_delegate %i[parser compiler] => 'self.class'`.
require "forwardable"

module Config
  SETTINGS = { "mode" => "strict" }.freeze
end

class Pattern
  extend Forwardable

  class << self
    def parser = "parser of #{self}"
    def compiler = "compiler of #{self}"
    def defaults = { "greedy" => true }
  end

  instance_delegate %i[parser compiler] => "self.class"
  def_delegator :@items, :size, :count
  def_delegators :list, :first, :last
  def_delegator "Config::SETTINGS", :fetch, :setting
  def_delegator "self.class.defaults", :keys, :default_keys
  def_delegator "@items.first", :upcase, :first_upcase
  delegate length: :@items, to_a: :@items

  def initialize(items)
    @items = items
  end

  private

  def list = @items
end

class StrictPattern < Pattern
  def self.parser = "strict parser"
end

pattern = Pattern.new(%w[a b c])
p pattern.parser, pattern.compiler, StrictPattern.new([]).parser, StrictPattern.new([]).compiler
p pattern.count, pattern.first, pattern.last, pattern.length, pattern.to_a
p pattern.setting("mode"), pattern.default_keys, pattern.first_upcase

class Registry
  extend SingleForwardable

  @store = { "k" => "v" }
  def_delegator :@store, :[], :lookup
  def_delegators "self.name", :downcase, :length
  def_single_delegator "Config::SETTINGS", :size
end

p Registry.lookup("k"), Registry.downcase, Registry.length, Registry.size

queue = []
queue.extend(SingleForwardable)
queue.def_delegator "self", :push, :enqueue
queue.enqueue(1)
p queue
