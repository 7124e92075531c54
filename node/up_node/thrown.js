'use strict';
// What a throw that no Ruby rescue caught was, for the log: an Opal exception (described as
// MRI would), an Error (its stack), or Opal's own throw for a `return` or `break` in a block.
//
// Opal throws a plain object (not an Error, so no rescue sees it) to carry a `return` or
// `break` out of a block to the frame that catches it. Opal 1.8 leaves one uncaught for a
// `return` in a block inside a lambda (`run ->(env) { list.each { return ... } }`): on MRI the
// lambda returns its value, on Opal the throw comes out of the app.

const path = require('node:path');

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

// Frames outside the app: Node's, installed gems' and UP!'s own.
const UP_ROOT = path.join(__dirname, '..', '..');

function appFrame(file) {
  return !file.startsWith('node:') && !file.includes('/gems/') && !file.startsWith(`${UP_ROOT}/`);
}

function display(file) {
  const cwd = `${process.cwd()}/`;
  return file.startsWith(cwd) ? file.slice(cwd.length) : file;
}

// "config.ru:2: ", the first frame of the app's own code among "FILE:LINE[:COLUMN]:in ..."
// (Opal's backtrace, mapped to the Ruby files) or a JS stack's "at f (FILE:LINE:COLUMN)".
function where(frames) {
  const located = frames.map((frame) => /^(?:\s*at (?:.*? \()?)?(.+?):(\d+)(?::\d+)?(?:\)|:in |$)/.exec(frame))
    .filter(Boolean);
  const found = located.find((m) => appFrame(m[1])) || located[0];
  return found ? `${display(found[1])}:${found[2]}: ` : '';
}

// What loading config.ru threw, in one line as up_ruby says it (Up::LoadFailure): where the
// app's code raised, the message's first line, the class.
function loadFailure(error) {
  if (error && error.$$class) {
    const trace = error.$backtrace();
    const frames = Array.isArray(trace) ? trace : [];
    const message = String(error.$message()).split('\n')[0];
    return `${where(frames)}${message} (${error.$$class.$name()})`;
  }
  if (escapedThrow(error) || !(error instanceof Error)) return describeThrown(error);
  const frames = String(error.stack || '').split('\n').slice(1);
  return `${where(frames)}${String(error.message).split('\n')[0]} (${error.name})`;
}

// A start that cannot load the app: one line on stderr in the runtime's name, the backtrace
// after it with --trace, status 1.
function bootFailed(options, error) {
  process.stderr.write(`${options.program}: ${loadFailure(error)}\n`);
  if (options.trace) process.stderr.write(`${describeThrown(error)}\n`);
  process.exit(1);
}

module.exports = { escapedThrow, describeThrown, loadFailure, bootFailed };
