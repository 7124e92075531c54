# frozen_string_literal: true
# backtick_javascript: true

# String#inspect and Hash#inspect (so Hash#to_s) with the output of Opal 1.8's (but for two
# cases of recursion, where it is now MRI's), faster in the common case. Why a core patch in
# up_node's glue: an app that dumps its env (test/rackup/env_to_s.ru, a debug page, a log
# line) spent 40% of the process in them, more than up_node and Node's HTTP together.
# Opal's String#inspect runs two regexp replaces over every string, with a callback, even
# when nothing needs escaping; its Hash#inspect sends each key and value through
# Opal.inspect, which wraps the call in a try block, keeps a stack of object ids and, for a
# String, finds its id in a table that keeps every String it was ever asked about (one entry
# per distinct header value or query, for the life of the process). Only the up_node bundle
# loads this file (boot.rb).

# Opal's escapable characters (corelib/string.rb, String#inspect), plus the "#$", "#@" and "#{"
# it escapes after them: a String with none of these inspects as itself in quotes. Tested on
# the plain JS string: inside a String method self is a boxed String (Opal's methods are not
# strict code), and every conversion of that back goes through String.prototype, which Opal
# fills with hundreds of methods. Hash#inspect tests the plain strings it holds as they are.
`var up_escapable = /[\\\"\x00-\x1f\u007F-\u009F\u0600-\u0604\u070f\u17b4\u17b5\u200c-\u200f\u2028-\u202f\u2060-\u206f\ufeff\ufff0-\uffff]|#[$@{]/;`

class String
  alias_method :up_escaped_inspect, :inspect
  private :up_escaped_inspect

  def inspect
    %x{
      var string = typeof self === 'string' ? self : self.valueOf();
      if (!up_escapable.test(string)) return '"' + string + '"';
    }
    up_escaped_inspect
  end
end

class Hash
  # The hashes being inspected: one that contains itself shows as {...}. MRI's rule: a hash
  # is "{...}" only inside its own inspect. (Opal's marks every hash seen during the outermost
  # call, so a hash held twice printed as {...} the second time, and Opal.inspect's own stack
  # made a hash inside an Array print as #<Hash:0x...>.) A Set, and a String built by +, as
  # push, pop and join ran in V8's C++ fallbacks here (perf), not its fast builtins.
  %x{
    var up_inspecting = new Set();

    // Strings, hashes and what cannot contain anything skip Opal.inspect, whose guards (a
    // try block, an id stack) only matter for objects that may hold themselves.
    function up_inspect(value) {
      if (typeof value === 'string') return up_escapable.test(value) ? value.$inspect() : '"' + value + '"';
      if (up_scalar(value)) return value.$inspect();
      if (value != null && (value.$$is_hash || value.$$is_string)) return value.$inspect();
      var flat = up_inspect_flat_array(value);
      return flat === null ? Opal.Opal.$inspect(value) : flat;
    }

    function up_scalar(value) {
      return typeof value === 'boolean' || typeof value === 'number' || value === Opal.nil;
    }

    var up_array_inspect = Opal.Array.$$prototype.$inspect;
    var up_array_at = Opal.Array.$$prototype['$[]'];

    // Array#inspect's output for a plain Array (Opal's #inspect and #[], no singleton class)
    // of plain Strings, numbers, booleans and nil, such as rack.version; null for any other
    // value. Nothing in such an Array can hold it, so neither Opal.inspect's id stack nor
    // Array#inspect's own could find it inside itself; each costs a try block and an Array
    // push and pop, which Opal's bridged Array sends to V8's slow path.
    function up_inspect_flat_array(value) {
      if (value == null || Object.getPrototypeOf(value) !== Array.prototype) return null;
      if (value.$inspect !== up_array_inspect || value['$[]'] !== up_array_at) return null;
      var out = '';
      for (var i = 0; i < value.length; i++) {
        var item = value[i];
        if (typeof item !== 'string' && !up_scalar(item)) return null;
        out += (i === 0 ? '' : ', ') + up_inspect(item);
      }
      return '[' + out + ']';
    }
  }

  def inspect
    %x{
      if (up_inspecting.has(self)) return '{...}';
      up_inspecting.add(self);
      try {
        var out = '', separator = '';
        for (var [key, value] of self) {
          out += separator + up_inspect(key) + '=>' + up_inspect(value);
          separator = ', ';
        }
        return '{' + out + '}';
      } finally {
        up_inspecting.delete(self);
      }
    }
  end

  alias to_s inspect
end
