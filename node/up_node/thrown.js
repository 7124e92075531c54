'use strict';
// What a throw that no Ruby rescue caught was, for the log: an Opal exception (described as
// MRI would), an Error (its stack), or Opal's own throw for a `return` or `break` in a block.
//
// Opal throws a plain object (not an Error, so no rescue sees it) to carry a `return` or
// `break` out of a block to the frame that catches it. Opal 1.8 leaves one uncaught for a
// `return` in a block inside a lambda (`run ->(env) { list.each { return ... } }`): on MRI the
// lambda returns its value, on Opal the throw comes out of the app.

function escapedThrow(error) {
  return error != null && !(error instanceof Error) && typeof error.$thrower_type === 'string';
}

function describeThrown(error) {
  const Opal = globalThis.Opal;
  if (Opal && Opal.Up && Opal.Up.Node && error && error.$$class) return Opal.Up.Node.$describe(error);
  if (escapedThrow(error)) {
    return `a '${error.$thrower_type}' in a block escaped the app: Opal 1.8 does not catch a ` +
      'return in a block inside a lambda (on MRI the lambda returns); use next, or a method';
  }
  return String(error && error.stack ? error.stack : error);
}

module.exports = { escapedThrow, describeThrown };
