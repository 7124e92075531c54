# frozen_string_literal: true
# backtick_javascript: true

# Opal.send and Opal.send2 (under every call with a block, every `super` and every alias),
# Opal.yield1 (a block of several parameters given an Array) and Opal.yieldX (`yield a, b`)
# call the method or block with Function#call for up to three arguments, where Opal 1.8
# always uses Function#apply with an Array of them. Opal gives Array.prototype a prototype of
# its own, which turns off V8's guard that no Array has elements inherited from a prototype;
# from then on every `apply` of an Array copies it through V8's generic path, several times
# the cost of the call itself.
#
# The rest is Opal's, in Opal's order: a missing method (method_missing) goes to Opal's
# send2, the block's options are set on the block, and the block is handed to the method.
# A yield to no block, or to a lambda with a `return` of its own, goes to Opal's yield.
# (The corelib's files, loaded before this one, keep the functions they took.)
%x{
  var up_send = Opal.send, up_send2 = Opal.send2;

  // Opal.send finds the method by name and calls it itself, as send2 below does, not through
  // send2: one frame less under every call with a block. A method given as neither a
  // function nor a name raises in Opal's send, a missing one goes to method_missing in
  // Opal's send2.
  Opal.send = function(recv, method, args, block, blockopts) {
    var body;
    if (typeof(method) === 'function') {
      body = method;
      method = null;
    } else if (typeof(method) === 'string') {
      body = recv[Opal.jsid(method)];
    } else {
      return up_send(recv, method, args, block, blockopts);
    }
    if (body == null) return up_send2(recv, body, method, args, block, blockopts);

    if (typeof(blockopts) === 'number') {
      block.$$arity = blockopts;
    } else if (typeof(blockopts) === 'object') {
      Object.assign(block, blockopts);
    }
    if (typeof block === 'function') body.$$p = block;
    switch (args == null ? 0 : args.length) {
      case 0: return body.call(recv);
      case 1: return body.call(recv, args[0]);
      case 2: return body.call(recv, args[0], args[1]);
      case 3: return body.call(recv, args[0], args[1], args[2]);
      default: return body.apply(recv, args);
    }
  };

  Opal.send2 = function(recv, body, method, args, block, blockopts) {
    if (body == null) return up_send2(recv, body, method, args, block, blockopts);

    if (typeof(blockopts) === 'number') {
      block.$$arity = blockopts;
    } else if (typeof(blockopts) === 'object') {
      Object.assign(block, blockopts);
    }
    if (typeof block === 'function') body.$$p = block;

    // Written out in each function rather than in a helper: a helper would be one more frame
    // under every call, which a throw on its way to its catch walks.
    switch (args == null ? 0 : args.length) {
      case 0: return body.call(recv);
      case 1: return body.call(recv, args[0]);
      case 2: return body.call(recv, args[0], args[1]);
      case 3: return body.call(recv, args[0], args[1], args[2]);
      default: return body.apply(recv, args);
    }
  };

  // Opal's yield1 reads four flags of the block on every call; here a block of no or one
  // parameter without the flags that change how it takes its argument is called at once, as
  // Opal calls it. A block called with an Array to take apart gets `this` null, as Opal's
  // apply gave it.
  var up_yield1 = Opal.yield1;
  Opal.yield1 = function(block, arg) {
    if (typeof block !== 'function' || (block.$$is_lambda && block.$$ret)) return up_yield1(block, arg);
    var length = block.length;
    if (length === 0) return block(arg);
    if (length === 1) {
      if (block.$$has_top_level_mlhs_arg || block.$$has_trailing_comma_in_args) return up_yield1(block, arg);
      return block(arg);
    }
    arg = Opal.to_ary(arg);
    if (!arg.$$is_array) return block(arg);
    switch (arg.length) {
      case 0: return block.call(null);
      case 1: return block.call(null, arg[0]);
      case 2: return block.call(null, arg[0], arg[1]);
      case 3: return block.call(null, arg[0], arg[1], arg[2]);
      default: return block.apply(null, arg);
    }
  };

  var up_yieldX = Opal.yieldX;
  Opal.yieldX = function(block, args) {
    if (typeof block !== 'function' || (block.$$is_lambda && block.$$ret)) return up_yieldX(block, args);
    if (block.length > 1 && args.length === 1 && args[0].$$is_array) args = args[0];
    switch (args.length) {
      case 0: return block.call(null);
      case 1: return block.call(null, args[0]);
      case 2: return block.call(null, args[0], args[1]);
      case 3: return block.call(null, args[0], args[1], args[2]);
      default: return block.apply(null, args);
    }
  };
}
