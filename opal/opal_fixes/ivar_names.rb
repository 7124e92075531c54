# frozen_string_literal: true
# backtick_javascript: true

# The run-time half of Up::Node::Rewriters::IvarNames (lib/up/node/rewriters/ivar_names.rb):
# an instance variable named like a property of every JavaScript function (`@name`,
# `@length`, `@prototype`, `@caller`, `@arguments`) is kept under that name plus "$", as Opal
# already does for `@constructor`. Opal.ivar maps a name for instance_variable_get/set and
# friends; attr_reader and attr_writer are defined again because Opal's bind the old
# Opal.ivar when the corelib loads (and, as in MRI, they and attr_accessor return the names
# of the methods they define, so that `private attr_reader :x` works).
# Kernel#instance_variables already drops the "$"; Module#instance_variables is below.
%x{
  var up_reserved_ivars = ["constructor", "displayName", "__count__", "__noSuchMethod__",
    "__parent__", "__proto__", "hasOwnProperty", "valueOf",
    "name", "length", "prototype", "caller", "arguments"];

  Opal.ivar = function(name) {
    return up_reserved_ivars.indexOf(name) === -1 ? name : name + "$";
  };
}

class Module
  def attr_reader(*names)
    %x{
      Opal.deny_frozen_access(self);
      for (var i = names.length - 1; i >= 0; i--) {
        var name = names[i], ivar = Opal.ivar(name), body = Opal.return_ivar(ivar);
        Opal.prop(self.$$prototype, ivar, nil);
        body.$$parameters = [];
        body.$$arity = 0;
        Opal.defn(self, Opal.jsid(name), body);
      }
    }
    names.map(&:to_s)
  end

  def attr_writer(*names)
    %x{
      Opal.deny_frozen_access(self);
      for (var i = names.length - 1; i >= 0; i--) {
        var name = names[i], ivar = Opal.ivar(name), body = Opal.assign_ivar(ivar);
        Opal.prop(self.$$prototype, ivar, nil);
        body.$$parameters = [['req']];
        body.$$arity = 1;
        Opal.defn(self, Opal.jsid(name + '='), body);
      }
    }
    names.map { |name| "#{name}=" }
  end

  def attr_accessor(*names)
    attr_reader(*names).zip(attr_writer(*names)).flatten
  end
end

# Module#instance_variables, unlike Kernel's, kept the "$" of a renamed name ("@name$").
class Module
  def instance_variables
    consts = constants
    %x{
      var result = [];
      Opal.each_ivar(self, function(name) {
        if (name === 'constructor' || #{consts.include?(`name`)}) return;
        result.push('@' + (name.substr(-1) === '$' ? name.slice(0, -1) : name));
      });
      return result;
    }
  end
end
