# frozen_string_literal: true
# backtick_javascript: true

# A constant named in a class body or method (`Rack::Utils`, `Headers`, `FORMAT`) is read
# from the cache Opal keeps for its lexical scope without going through Opal.$$ first. Each
# compiled scope asks for constants through a function Opal.$r made for its nesting, which
# called Opal.$$ (Opal.const_get_relative): one more call, and a look-up of `$$` among the
# hundreds of properties of the Opal object, before the cache was read. What the cache holds
# and when it is stale are Opal's: an entry of the current constant generation (which every
# constant set or removed, include and prepend moves on) that found a constant; anything
# else goes to Opal.$$ as before.
%x{
  Opal.const_get_relative_factory = Opal.$r = function(nesting) {
    return function(name, skip_missing) {
      var cache = nesting.$$const_cache, cached;
      if (cache != null && (cached = cache[name]) != null && cached[0] === Opal.const_cache_version && cached[1] != null) {
        return cached[1];
      }
      return Opal.$$(nesting, name, skip_missing);
    };
  };
}
