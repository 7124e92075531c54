# frozen_string_literal: true
# backtick_javascript: true

# Array#all?, #any?, #none?, #find and #detect with a block stop by returning from their
# loop. Opal 1.8 inherits them from Enumerable, where each is an `each` whose block
# `return`s: a JS throw, caught in the method, whenever the answer is known before the last
# element. A throw costs V8 a message and a walk of the frames, far more than the loop:
# Roda matches every branch of its routing tree with `args.all?`, and Sinatra checks its
# charset types with `all?` on every `content_type`.
#
# The block is called as Enumerable's call it: all?, any? and none? yield the element as
# `yield(*[element])` does (Opal.yieldX), find and detect as `yield(element)` (Opal.yield1),
# and the length is read at each step, as Array#each reads it. A pattern, no block, or
# find's `ifnone` go to Enumerable's.
class Array
  def all?(pattern = undefined, &block)
    return super if `pattern !== undefined` || block.nil?

    %x{
      for (var i = 0; i < self.length; i++) {
        if (!Opal.truthy(Opal.yieldX(block, [self[i]]))) return false;
      }
      return true;
    }
  end

  def any?(pattern = undefined, &block)
    return super if `pattern !== undefined` || block.nil?

    %x{
      for (var i = 0; i < self.length; i++) {
        if (Opal.truthy(Opal.yieldX(block, [self[i]]))) return true;
      }
      return false;
    }
  end

  def none?(pattern = undefined, &block)
    return super if `pattern !== undefined` || block.nil?

    %x{
      for (var i = 0; i < self.length; i++) {
        if (Opal.truthy(Opal.yieldX(block, [self[i]]))) return false;
      }
      return true;
    }
  end

  def find(ifnone = undefined, &block)
    return super if `ifnone !== undefined` || block.nil?

    %x{
      for (var i = 0; i < self.length; i++) {
        var value = self[i];
        if (Opal.truthy(Opal.yield1(block, value))) return value;
      }
      return nil;
    }
  end

  def detect(ifnone = undefined, &block)
    return super if `ifnone !== undefined` || block.nil?

    find(&block)
  end
end
