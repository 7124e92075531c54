'use strict';
// --access-log FILE on `up`: the lines are made and buffered in C (ext/up/node/served.c, with
// the engine's access_log.c, the format up_ruby writes); this file opens the log, flushes the
// buffer once a second (so a quiet server's lines are at most a second late), reopens the
// file on HUP (logrotate renamed it) and writes what is left at the exit. Without
// --access-log it does nothing, and the addon skips the log with one NULL check a request.

// How often what is buffered goes to the file.
const FLUSH_MS = 1000;

// addon: up.node after createServer; name: "up" or "worker N", for the log line of a reopen.
// Exits with status 1, saying why, when the file cannot be opened.
function startAccessLog(addon, options, log, name) {
  const path = options.access_log;
  if (!path) return;
  try {
    addon.openAccessLog(path);
  } catch (error) {
    process.stderr.write(`up: cannot open access log: ${error.message}\n`);
    process.exit(1);
  }
  setInterval(() => addon.flushAccessLog(), FLUSH_MS).unref();
  process.on('SIGHUP', () => {
    const failed = addon.reopenAccessLog();
    log.line(failed ? `${name} cannot reopen ${path}: ${failed}; still writing to the old file` : `${name} reopened ${path}`);
  });
  process.on('exit', () => addon.closeAccessLog());
}

module.exports = { startAccessLog };
