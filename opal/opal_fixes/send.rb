# frozen_string_literal: true
# backtick_javascript: true

# Opal.send and Opal.send2 (every call with a block, and every `super`, in compiled code)
# set a block's options (its self, arity, break and return markers) one property at a
# time. Opal's copy them with Object.assign, a generic copy that costs more than the rest
# of the call; the compiler writes only the keys set here (Opal::Nodes::IterNode and
# DefNode; test_opal_fixes.rb checks the list against the installed compiler). Files
# compiled after this one take these functions when they load (`var $send = Opal.send`);
# Opal's corelib keeps its own.
%x{
  function up_apply_blockopts(block, blockopts) {
    if (typeof blockopts === 'number') {
      block.$$arity = blockopts;
    } else if (typeof blockopts === 'object') {
      if (blockopts.$$s !== undefined) block.$$s = blockopts.$$s;
      if (blockopts.$$arity !== undefined) block.$$arity = blockopts.$$arity;
      if (blockopts.$$brk !== undefined) block.$$brk = blockopts.$$brk;
      if (blockopts.$$ret !== undefined) block.$$ret = blockopts.$$ret;
      if (blockopts.$$parameters !== undefined) block.$$parameters = blockopts.$$parameters;
      if (blockopts.$$comments !== undefined) block.$$comments = blockopts.$$comments;
      if (blockopts.$$source_location !== undefined) block.$$source_location = blockopts.$$source_location;
      if (blockopts.$$has_top_level_mlhs_arg !== undefined) block.$$has_top_level_mlhs_arg = blockopts.$$has_top_level_mlhs_arg;
      if (blockopts.$$has_trailing_comma_in_args !== undefined) block.$$has_trailing_comma_in_args = blockopts.$$has_trailing_comma_in_args;
    }
  }

  Opal.send2 = function(recv, body, method, args, block, blockopts) {
    if (body == null && method != null && recv.$method_missing) {
      body = recv.$method_missing;
      args = [method].concat(args.$$is_array ? args : Array.prototype.slice.call(args));
    }
    up_apply_blockopts(block, blockopts);
    if (typeof block === 'function') body.$$p = block;
    return body.apply(recv, args);
  };

  Opal.send = function(recv, method, args, block, blockopts) {
    var body;
    if (typeof method === 'function') {
      body = method;
      method = null;
    } else if (typeof method === 'string') {
      body = recv[Opal.jsid(method)];
    } else {
      Opal.Kernel.$raise(Opal.NameError, 'Passed method should be a string or a function');
    }
    return Opal.send2(recv, body, method, args, block, blockopts);
  };
}
