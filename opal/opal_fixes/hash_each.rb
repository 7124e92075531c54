# frozen_string_literal: true
# backtick_javascript: true

# Hash#each and #each_pair copy the pairs they will yield with Map#forEach. Opal 1.8 copies
# them with Array.from(map.entries()), which V8 runs on its slow path once Opal has changed
# Array.prototype's prototype: several times the cost of the loop, even for one pair, and
# Rack, Sinatra and Roda walk small Hashes (headers, params, settings) on every request.
# What is yielded is Opal's: each pair present when the walk starts, as one [key, value]
# argument, so a pair added by the block is not visited and one it deletes still is.
class Hash
  def each(&block)
    return enum_for(:each) { size } unless block

    %x{
      var size = self.size, keys = new Array(size), values = new Array(size), i = 0;
      self.forEach(function(value, key) {
        keys[i] = key;
        values[i] = value;
        i++;
      });
      for (i = 0; i < size; i++) Opal.yield1(block, [keys[i], values[i]]);
    }
    self
  end

  def each_pair(&block)
    return enum_for(:each_pair) { size } unless block

    each(&block)
  end
end
