# frozen_string_literal: true

# Constants read again and again from a method while they are set, replaced, removed and
# shadowed between the reads: lexical scope first, then ancestors, then Object, and
# const_missing for one that is gone.
module Mixin
  SHARED = "mixin"
end

class Base
  FROM_BASE = "base"
end

module Outer
  LEXICAL = "outer"

  class Reader < Base
    def read = [LEXICAL, FROM_BASE, SHARED_LATER, Float::INFINITY.infinite?, Helper.name]
    def late = defined?(LATE) ? LATE : "no late"
    def shared = SHARED

    def self.const_missing(name) = "missing #{name}"
  end

  module Helper; end
  SHARED_LATER = "first"
end

reader = Outer::Reader.new
3.times { p reader.read }

Outer.send(:remove_const, :SHARED_LATER)
Outer.const_set(:SHARED_LATER, "second")
p reader.read

Outer::Reader.const_set(:LEXICAL, "own")
p reader.read
Outer::Reader.send(:remove_const, :LEXICAL)
p reader.read

p reader.late
Outer.const_set(:LATE, "late now")
p reader.late

p reader.shared
Outer::Reader.include(Mixin)
p reader.shared
Mixin.send(:remove_const, :SHARED)
p reader.shared
Base.const_set(:SHARED, "from base")
p reader.shared
Outer::Reader.send(:remove_const, :FROM_BASE) rescue p $!.class
Base.send(:remove_const, :FROM_BASE)
p reader.read.first(2)
