# frozen_string_literal: true

# Method#parameters is an Array of [kind, name?] pairs, as in MRI (Opal answered undefined
# unless compiled with arity checks). Names are not known without that record, so what is
# compared is what code such as Tilt's check can rely on.
class Engine
  def initialize(text, safe = nil, trim = nil, eoutvar = "_erbout", trim_mode: nil)
    @text = [text, safe, trim, eoutvar, trim_mode]
  end

  def two(first, second) = [first, second]

  def none = @text
end

kinds = %i[req opt rest keyreq key keyrest block nokey].map(&:to_s)
[Engine.instance_method(:initialize), Engine.instance_method(:two), Engine.new(1).method(:none),
 Engine.instance_method(:initialize).bind(Engine.new(1))].each do |method|
  params = method.parameters
  p params.is_a?(Array), params.all? { |pair| pair.is_a?(Array) && kinds.include?(pair.first.to_s) }
end
p Engine.instance_method(:two).parameters.count { |kind, _| kind == :req }, Engine.instance_method(:none).parameters
supports_kwargs = Engine.instance_method(:initialize).parameters.assoc(:key) rescue :raised
p supports_kwargs == :raised
