# frozen_string_literal: true
# backtick_javascript: true

# Array#all?, #any?, #none?, #find and #detect, and Hash#find and #detect, with a block
# stop by returning from their loop. Opal 1.8 inherits them from Enumerable, where each is an
# `each` whose block `return`s: a JS throw, caught in the method, whenever the answer is
# known before the last element. A throw costs V8 a message and a walk of the frames, far
# more than the loop: Roda matches every branch of its routing tree with `args.all?`,
# Sinatra checks its charset types with `all?` on every `content_type`, and rack-protection
# finds the content-type field with `detect` on every response.
#
# The block is called as Enumerable's call it: all?, any? and none? yield the element as
# `yield(*[element])` does (Opal.yieldX), find and detect as `yield(element)` (Opal.yield1),
# and the length is read at each step, as Array#each reads it; a Hash's pairs are those it
# has when the walk starts, as Hash#each walks them. A pattern, no block, find's `ifnone`,
# or an `each` of a subclass's own (which MRI's find calls) go to Enumerable's.
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
    return super if `ifnone !== undefined` || block.nil? || `self.$each !== Opal.Array.$$prototype.$each`

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

class Hash
  def find(ifnone = undefined, &block)
    return super if `ifnone !== undefined` || block.nil? || `self.$each !== Opal.Hash.$$prototype.$each`

    %x{
      var size = self.size, keys = new Array(size), values = new Array(size), i = 0, pair;
      self.forEach(function(value, key) {
        keys[i] = key;
        values[i] = value;
        i++;
      });
      for (i = 0; i < size; i++) {
        pair = [keys[i], values[i]];
        if (Opal.truthy(Opal.yield1(block, pair))) return pair;
      }
      return nil;
    }
  end

  def detect(ifnone = undefined, &block)
    return super if `ifnone !== undefined` || block.nil?

    find(&block)
  end
end
