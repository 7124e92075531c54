# frozen_string_literal: true
# backtick_javascript: true

# Array#collect (map) and #select (filter) build their result in an Array made to the
# receiver's length, then cut to what was kept (#reject too, in array_block_args.rb). Opal
# 1.8 grows an empty Array by push or by storing past its end; with Array.prototype given a
# prototype of its own by Opal, V8 checks the prototype chain on each such store, several
# times the cost of a store into an Array that has the room. The block is called as Opal's
# methods call it, and the length is read at each step, as they read it.
class Array
  def collect(&block)
    return enum_for(:collect) { size } unless block

    %x{
      var result = new Array(self.length), i;
      for (i = 0; i < self.length; i++) result[i] = Opal.yield1(block, self[i]);
      result.length = i;
      return result;
    }
  end

  def select(&block)
    return enum_for(:select) { size } unless block

    %x{
      var result = new Array(self.length), kept = 0, item;
      for (var i = 0; i < self.length; i++) {
        item = self[i];
        if (Opal.truthy(Opal.yield1(block, item))) result[kept++] = item;
      }
      result.length = kept;
      return result;
    }
  end

  alias map collect
  alias filter select
end
