# frozen_string_literal: true
# backtick_javascript: true

# Hash#each and #each_pair, and Opal.hash_each (which Opal's runtime calls to copy a Hash,
# in dup, clone and keyword arguments), copy the pairs they will walk with Map#forEach.
# Opal 1.8 copies them with Array.from(map.entries()), which V8 runs on its slow path once
# Opal has changed Array.prototype's prototype: several times the cost of the loop, even
# for one pair, and Rack, Sinatra and Roda walk and copy small Hashes (headers, params,
# settings, the session) on every request. What is walked is Opal's: each pair present
# when the walk starts, so a pair added meanwhile is not visited and one deleted still is.
# (The methods of Opal's corelib Hash that call hash_each took it when they loaded.)
%x{
  Opal.hash_each = function(hash, dres, fun) {
    var size = hash.size, keys = new Array(size), values = new Array(size), i = 0, res;
    hash.forEach(function(value, key) {
      keys[i] = key;
      values[i] = value;
      i++;
    });
    for (i = 0; i < size; i++) {
      res = fun(keys[i], values[i]);
      if (res[0]) return res[1];
    }
    return res ? res[1] : dres;
  };
}

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
