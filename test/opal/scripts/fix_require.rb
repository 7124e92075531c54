# frozen_string_literal: true

# A require that MRI might never run, or whose LoadError is rescued, of a file that does
# not exist: it compiles, and raises LoadError where MRI does, each time.
def load_feature
  require "up_missing_feature"
  :loaded
rescue LoadError => e
  [e.class.to_s, e.message]
end

p load_feature, load_feature

def later
  require "up_missing_later"
end

p(begin
  later
rescue LoadError => e
  e.message
end)

begin
  require "set"
  p Set.new([1, 1]).size
rescue LoadError
  p :never
end

p(begin
  require_relative "up_missing_relative"
rescue ScriptError => e
  [e.class.to_s, e.message.include?("up_missing_relative")]
end)

p(begin
  require "up_missing_feature"
rescue ::Exception => e # rubocop:disable Lint/RescueException
  e.class.to_s
end)

# A fallback required in a rescue clause runs only when the first require failed.
p(begin
  require "set"
  "first"
rescue LoadError
  require "up_missing_fallback"
  "fallback"
end)
