# frozen_string_literal: true
# backtick_javascript: true

# A block with several parameters takes an Array element apart (`pairs.reject { |file, line|
# ... }`), as every other Array method does through Opal.yield1. Array#reject, #index,
# #rindex and #take_while called the block with the element whole, so `file` was the pair:
# Sinatra's caller_files rejected nothing and took its own base.rb for the app's file (and
# its views directory from there).
class Array
  def reject(&block)
    return enum_for(:reject) { size } unless block

    # Built as opal_fixes/array_build.rb builds select's result; the element kept is the one
    # the block was given, as in MRI.
    %x{
      var result = new Array(self.length), kept = 0, item, value;
      for (var i = 0; i < self.length; i++) {
        item = self[i];
        value = Opal.yield1(block, item);
        if (value === false || value === nil) result[kept++] = item;
      }
      result.length = kept;
      return result;
    }
  end

  def take_while(&block)
    return enum_for(:take_while) unless block

    %x{
      var result = [];
      for (var i = 0; i < self.length; i++) {
        var value = Opal.yield1(block, self[i]);
        if (value === false || value === nil) break;
        result.push(self[i]);
      }
      return result;
    }
  end

  alias __opal_index index
  def index(*args, &block)
    return __opal_index(*args, &block) unless block && args.empty?

    `for (var i = 0; i < self.length; i++) { var v = Opal.yield1(block, self[i]); if (v !== false && v !== nil) return i; }`
    nil
  end
  alias find_index index

  alias __opal_rindex rindex
  def rindex(*args, &block)
    return __opal_rindex(*args, &block) unless block && args.empty?

    `for (var i = self.length - 1; i >= 0; i--) { var v = Opal.yield1(block, self[i]); if (v !== false && v !== nil) return i; }`
    nil
  end
end
