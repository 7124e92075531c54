# frozen_string_literal: true
# backtick_javascript: true

# A require of a file that is not in the bundle raises LoadError each time, as in MRI.
# Opal marked the name as loaded before finding it missing, so a second require of it
# answered false as if it had loaded. Such requires exist now that a build leaves out the
# missing files MRI may never load (Up::Node::OptionalRequires): `begin require "x"
# rescue LoadError end` run twice must fail twice.
%x{
  var up_load_normalized = Opal.load_normalized;
  Opal.load_normalized = function(path) {
    if (!Opal.modules[path] && Opal.config.missing_require_severity === 'error') {
      Opal.Kernel.$raise(Opal.LoadError.$new('cannot load such file -- ' + path));
    }
    return up_load_normalized(path);
  };
}
