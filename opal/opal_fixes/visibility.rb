# frozen_string_literal: true
# backtick_javascript: true

# Method visibility as far as Ruby code can observe it without calling: Opal keeps none
# (`private` does nothing), so respond_to? saw private methods and private_instance_methods
# was always empty. Sinatra's Delegator calls `super` when `respond_to?` says the method
# exists, which in MRI it does not for the private delegators, and Roda finds its hooks
# with private_instance_methods. Calls are not checked: a private method called with a
# receiver still runs (MRI raises NoMethodError), except through public_send.
#
# A module keeps the visibility of a method beside it on its prototype, under
# "$$up_vis$name" ("private", "protected", or false for public after a change), so it is
# inherited, copied into the classes that include the module, and found along the same
# chain as the method. The default visibility of a class body (`private` without
# arguments) is applied when the file is compiled (Up::Node::Rewriters::Visibility), and
# top-level methods are private, as in MRI.
%x{
  var up_vis_prefix = '$$up_vis';

  // The key of a method's visibility, made once per name (as Opal's jsid cache does): a key
  // concatenated at each respond_to? is a new string V8 hashes before every lookup.
  var up_vis_keys = new Map();
  function up_vis_key(jsid) {
    var key = up_vis_keys.get(jsid);
    if (key === undefined) {
      key = up_vis_prefix + jsid;
      up_vis_keys.set(jsid, key);
    }
    return key;
  }

  function up_proto(mod) {
    var proto = mod.$$prototype;
    return proto.hasOwnProperty('$$dummy') ? proto.$$define_methods_on : proto;
  }

  function up_set_vis(mod, jsid, vis) {
    var key = up_vis_key(jsid);
    Opal.prop(up_proto(mod), key, vis);
    if (mod.$$is_module) {
      for (var i = 0, iclasses = mod.$$iclasses, length = iclasses.length; i < length; i++) {
        Opal.prop(iclasses[i], key, vis);
      }
    }
  }

  Opal.up_visibility = function(obj, jsid) {
    return obj[up_vis_key(jsid)] || false;
  };
  Opal.up_set_visibility = up_set_vis;

  // A method defined again takes the visibility of where it is defined: public unless the
  // compiled class body says otherwise (it calls private with the name right after).
  var up_defn = Opal.defn;
  Opal.defn = function(module, jsid, body) {
    var result = up_defn(module, jsid, body);
    if (up_proto(module)[up_vis_key(jsid)]) up_set_vis(module, jsid, false);
    return result;
  };

  // An alias has the visibility of the method it names.
  // (Read before aliasing: the alias is defined with Opal.defn, which resets it.)
  var up_alias = Opal.alias;
  Opal.alias = function(obj, name, old) {
    var mod = typeof obj.$$prototype === 'undefined' ? Opal.Object : obj;
    var vis = mod.$$eval ? false : (up_proto(mod)[up_vis_key(Opal.jsid(old))] || false);
    var result = up_alias(obj, name, old);
    if (vis) up_set_vis(mod, Opal.jsid(name), vis);
    return result;
  };
}

class Module
  def public(*names)
    `self.$$module_function = false` if names.empty?
    __up_set_visibility(names, false)
  end

  def private(*names)
    __up_set_visibility(names, 'private')
  end

  def protected(*names)
    __up_set_visibility(names, 'protected')
  end

  # MRI makes the instance methods of module_function private; Opal copied them only.
  alias __opal_module_function module_function
  def module_function(*names)
    result = __opal_module_function(*names)
    __up_set_visibility(names, 'private') unless names.empty?
    result
  end

  def private_class_method(*names)
    singleton_class.__send__(:private, *names)
    nil
  end

  def public_class_method(*names)
    singleton_class.__send__(:public, *names)
    nil
  end

  def method_defined?(name, inherit = true)
    __up_defined?(name, inherit) { |vis| vis != 'private' }
  end

  def public_method_defined?(name, inherit = true)
    __up_defined?(name, inherit) { |vis| !vis }
  end

  def private_method_defined?(name, inherit = true)
    __up_defined?(name, inherit) { |vis| vis == 'private' }
  end

  def protected_method_defined?(name, inherit = true)
    __up_defined?(name, inherit) { |vis| vis == 'protected' }
  end

  def instance_methods(include_super = true)
    __up_methods(include_super) { |vis| vis != 'private' }
  end

  def public_instance_methods(include_super = true)
    __up_methods(include_super) { |vis| !vis }
  end

  def private_instance_methods(include_super = true)
    __up_methods(include_super) { |vis| vis == 'private' }
  end

  def protected_instance_methods(include_super = true)
    __up_methods(include_super) { |vis| vis == 'protected' }
  end

  # names: as given to private and friends (Symbols, Strings, or one Array of them).
  # Returns what MRI returns: nil, the one name, or the names.
  def __up_set_visibility(names, vis)
    return nil if names.empty?

    list = names.size == 1 && names.first.is_a?(Array) ? names.first : names
    list.each do |name|
      name = name.to_s
      unless `typeof(self.$$prototype[Opal.jsid(name)]) === 'function' && !self.$$prototype[Opal.jsid(name)].$$stub`
        ::Kernel.raise ::NameError.new("undefined method `#{name}' for class `#{self}'", name)
      end
      `up_set_vis(self, Opal.jsid(name), vis)`
    end
    names.size == 1 ? names.first : names
  end

  def __up_defined?(name, inherit)
    jsid = `Opal.jsid(#{name.to_s})`
    %x{
      var proto = self.$$prototype, body = proto[jsid];
      if (typeof body !== 'function' || body.$$stub) return false;
      if (!#{inherit} && !proto.hasOwnProperty(jsid) && !proto.hasOwnProperty(up_vis_key(jsid))) return false;
    }
    yield `Opal.up_visibility(self.$$prototype, jsid)`
  end

  # Names of the methods of this module (and its ancestors with include_super) whose
  # visibility the block accepts; a method made private here though defined in an
  # ancestor counts as this module's own, as in MRI.
  def __up_methods(include_super)
    names = include_super ? `Opal.instance_methods(self)` : `Opal.own_instance_methods(self)`
    unless include_super
      %x{
        var proto = self.$$prototype, props = Object.getOwnPropertyNames(proto);
        for (var i = 0; i < props.length; i++) {
          var prop = props[i];
          if (prop.indexOf(up_vis_prefix) !== 0) continue;
          var name = prop.slice(up_vis_prefix.length + 1);
          if (names.indexOf(name) === -1 && typeof proto['$' + name] === 'function') names.push(name);
        }
      }
    end
    names.select { |name| yield `Opal.up_visibility(self.$$prototype, Opal.jsid(name))` }
  end
end

module Kernel
  def respond_to?(name, include_all = false)
    %x{
      var jsid = Opal.jsid(name), body = self[jsid];
      if (typeof body === "function" && !body.$$stub) {
        return #{include_all} === true || !Opal.up_visibility(self, jsid);
      }
      if (self['$respond_to_missing?'].$$pristine === true) return false;
    }
    respond_to_missing?(name, include_all)
  end
  # Opal's own type checks (to_str, to_ary) keep their fast path, which sees private
  # methods too, as MRI's implicit conversions do.
  ::Opal.pristine(self, :respond_to?)

  def public_send(name, *args, &block)
    vis = `Opal.up_visibility(self, Opal.jsid(#{name.to_s}))`
    if vis
      ::Kernel.raise ::NoMethodError.new("#{vis} method `#{name}' called for #{inspect}", name)
    end
    __send__(name, *args, &block)
  end

  def methods(all = true)
    list = all ? `Opal.methods(self)` : `Opal.own_methods(self)`
    list.reject { |name| `Opal.up_visibility(self, Opal.jsid(name)) === 'private'` }
  end

  def public_methods(all = true)
    list = all ? `Opal.methods(self)` : `Opal.receiver_methods(self)`
    list.reject { |name| `Opal.up_visibility(self, Opal.jsid(name))` }
  end

  def private_methods(all = true)
    list = all ? `Opal.methods(self)` : `Opal.receiver_methods(self)`
    list.select { |name| `Opal.up_visibility(self, Opal.jsid(name)) === 'private'` }
  end

  def protected_methods(all = true)
    list = all ? `Opal.methods(self)` : `Opal.receiver_methods(self)`
    list.select { |name| `Opal.up_visibility(self, Opal.jsid(name)) === 'protected'` }
  end
end

# Methods defined at the top level are private methods of Object, as in MRI; the compiled
# file calls this with each one's name (Up::Node::Rewriters::Visibility).
def self.private(*names)
  ::Object.__send__(:private, *names)
end

def self.public(*names)
  ::Object.__send__(:public, *names)
end
