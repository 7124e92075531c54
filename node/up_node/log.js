'use strict';
// The server log in Up::Log's format ("[2026-11-23T16:51:19.123Z] message"), on stderr or
// appended to the -l file. Writes are synchronous: a line logged just before the process
// exits (a boot failure, "stopped") must not be lost. Every process opens its own; the
// Ruby side writes rack.errors through #write.

const fs = require('node:fs');

class Log {
  // path: the -l file, or null for stderr. Throws when the file cannot be opened.
  constructor(path) {
    this.fd = path ? fs.openSync(path, 'a') : 2;
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

module.exports = { Log };
