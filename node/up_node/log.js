'use strict';
// The server log in Up::Log's format ("[2026-11-23T16:51:19.123Z] message"), on stderr or
// appended to the -l file. Writes are synchronous: a line logged just before the process
// exits (a boot failure, "stopped") must not be lost. Every process opens its own; the
// Ruby side writes rack.errors through #write.

const fs = require('node:fs');

class Log {
  // path: the -l file, or null for stderr. Throws when the file cannot be opened.
  constructor(path) {
    this.path = path;
    this.fd = path ? fs.openSync(path, 'a') : 2;
  }

  // HUP (logrotate renamed the file): open it again by its name. When that fails the old
  // file stays in use, as up_ruby's Log#reopen does.
  reopen() {
    if (!this.path) return;
    try {
      const fd = fs.openSync(this.path, 'a');
      fs.closeSync(this.fd);
      this.fd = fd;
    } catch (error) {
      this.line(`cannot reopen ${this.path}: ${error.message}; still writing to the old file`);
    }
  }

  // One line; a message that ends in a newline (a backtrace) gets no blank line after it.
  line(message) {
    const text = String(message).replace(/\n+$/, '');
    this.write(`[${new Date().toISOString()}] ${text}\n`);
  }

  // Raw text (rack.errors). A full disk or closed stderr must not take the server down.
  write(text) {
    try {
      fs.writeSync(this.fd, typeof text === 'string' ? text : String(text));
    } catch (_) {
      // nowhere left to report it
    }
  }
}

// Signals up_ruby acts on that up_node cannot (restarts, adding workers). Node's defaults
// would end or stop the process (and USR1 would start the inspector), so they are logged.
const UNSUPPORTED_SIGNALS = ['SIGUSR1', 'SIGUSR2', 'SIGTTIN', 'SIGTTOU'];

// Each of signals is logged, in the words of why(name without SIG), and otherwise ignored.
function ignoreSignals(log, signals, why) {
  for (const signal of signals) process.on(signal, () => log.line(why(signal.slice(3))));
}

function ignoreUnsupportedSignals(log) {
  ignoreSignals(log, UNSUPPORTED_SIGNALS, (signal) => `${signal} is not supported by up_node; ignored`);
}

// "up_node 0.2.0 worker 1 [shop] tcp://127.0.0.1:3000": up_ruby's titles (Up::BootBanner#title)
// with this runtime's name; role null for one process.
function processTitle(options, role, urls) {
  const binds = urls.map((url) => url.replace(/^https:\/\//, 'ssl://').replace(/^http:\/\//, 'tcp://'));
  return [options.program, options.version, role, `[${options.title_app}]`, ...binds].filter(Boolean).join(' ');
}

// The line before "listening on" (Up::BootBanner): what runs, and how.
function banner(options) {
  return `UP! ${options.version} (${options.program}, node ${process.version}): ${options.banner}`;
}

module.exports = { Log, ignoreSignals, ignoreUnsupportedSignals, processTitle, banner };
