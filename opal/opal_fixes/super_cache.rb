# frozen_string_literal: true
# backtick_javascript: true

# `super` finds the next method once per method, receiver's ancestors and name, not at every
# call. Opal 1.8 looks it up at each call (Opal.find_super): it walks the receiver's
# ancestors to the calling method's owner, then each later ancestor's prototype for the
# name. Rack::Headers, a Hash, calls super in []=, [], fetch, key? and delete, and
# Sinatra's and Roda's request paths call super through several modules on every request.
#
# What the walk finds depends only on the ancestors (Opal keeps one Array per module and
# makes a new one whenever an include, prepend or extend changes any chain, so its identity
# stands for the chain) and on which prototypes hold the name, which changes only by
# Opal.defn (def, define_method, alias, singleton methods), Opal.rdef, Opal.udef and
# Opal.add_stub_for: each of those starts a new generation, and a lookup of an older
# generation is walked again. What the caller is told (the method, nil for a stub, or
# NoMethodError) is decided after the lookup, at each call, as Opal decides it.
%x{
  var up_find_super = Opal.find_super;
  var up_super_generation = 0;

  ['defn', 'rdef', 'udef', 'add_stub_for'].forEach(function(name) {
    var original = Opal[name];
    Opal[name] = function() {
      up_super_generation++;
      return original.apply(this, arguments);
    };
  });

  function up_ancestors_of(obj) {
    var mod = (obj.hasOwnProperty('$$meta') && obj.$$meta !== null) ? obj.$$meta : obj.$$class;
    return Opal.ancestors(mod);
  }

  Opal.find_super = function(obj, mid, current_func, defcheck, allow_stubs) {
    var ancestors = up_ancestors_of(obj), cache = current_func.$$up_super, super_method;
    if (cache !== undefined && cache.generation === up_super_generation &&
        cache.ancestors === ancestors && cache.mid === mid) {
      super_method = cache.method;
      if (super_method.$$stub && !defcheck) return up_find_super(obj, mid, current_func, defcheck, allow_stubs);
      return (super_method.$$stub && !allow_stubs) ? null : super_method;
    }

    var generation = up_super_generation;
    super_method = up_find_super(obj, mid, current_func, defcheck, true);
    if (super_method != null && generation === up_super_generation) {
      current_func.$$up_super = { generation: generation, ancestors: ancestors, mid: mid, method: super_method };
    }
    return (super_method != null && super_method.$$stub && !allow_stubs) ? null : super_method;
  };
}
