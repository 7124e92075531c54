'use strict';
// `up`'s restarts, up_ruby's (docs/signals.md) on Node, for serve.js (one process) and the
// cluster primary (node/up_node/primary.js, given these by main.js).
//
// A hot restart re-executes the command that started `up` (options.restart: its words, its
// directory and the environment the MRI front half changed, from Up::Node::AddonLauncher) in
// place, same pid, through the addon's execvpe (ext/up/node/restart.c: Node has no exec). The
// listening sockets stay open across it, named in UP_LISTEN_FDS, and the front half adopts them
// (Up::Binder) instead of binding, so no connection is refused. In a cluster the workers go on
// serving across the primary's exec: the primary's end of each one's node:cluster channel is
// kept open too (UP_OLD_CHECK_FDS, their pids and indexes in UP_OLD_WORKERS, as up_ruby names
// them), so they see no disconnect; the new image forks its own workers and, once they all
// serve, closes those channels and sends the old ones TERM (OldWorkers#release): they drain
// and exit, and it reaps them (libuv waits only for children it spawned).
//
// Before either restart the app is compiled by the command itself with UP_BUILD_ONLY set
// (#build): code that does not compile is logged while the old code serves on, and the
// re-executed front half then finds the bundle built.

const { spawn } = require('node:child_process');
const fs = require('node:fs');

const ENV_OLD_WORKERS = 'UP_OLD_WORKERS';
const ENV_OLD_CHECKS = 'UP_OLD_CHECK_FDS';
// How often the reaper looks for old workers that exited.
const REAP_POLL_MS = 50;
// The most of the build's error output kept for the log.
const MAX_BUILD_OUTPUT = 64 * 1024;

// The environment the command started with, plus extra: the front half's own variables gone.
function commandEnv(options, extra) {
  const env = { ...process.env };
  delete env.UP_NODE_OPTIONS;
  for (const [name, value] of Object.entries(options.restart.env)) {
    if (value === null) delete env[name];
    else env[name] = value;
  }
  return Object.assign(env, extra);
}

// Compiles the app as the restart will (the command with UP_BUILD_ONLY); calls done(null), or
// done(message) with the command's one-line error ("up: config.ru:3: unexpected token ...").
function build(options, done) {
  const [file, ...args] = options.restart.argv;
  let output = '';
  const child = spawn(file, args, {
    cwd: options.restart.dir, env: commandEnv(options, { UP_BUILD_ONLY: '1' }), stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr.on('data', (data) => {
    if (output.length < MAX_BUILD_OUTPUT) output += data.toString();
  });
  child.on('error', (error) => done(`cannot run ${file}: ${error.message}`));
  child.on('close', (code, signal) => {
    if (code === 0) return done(null);
    done(output.trim().replace(/\n+/g, '; ') || `${file} ended with ${signal || `status ${code}`}`);
  });
}

// Re-executes the command in place with the listening sockets, and keepFds and env besides.
// Returns only when exec failed, after logging why.
function reexec(addon, options, log, { env = {}, keepFds = [] } = {}) {
  const argv = options.restart.argv;
  log.line(`re-executing ${argv.join(' ')}`);
  const full = commandEnv(options, { UP_LISTEN_FDS: options.restart.listen_env, ...env });
  try {
    process.chdir(options.restart.dir);
    addon.execvpe(argv, Object.entries(full).map(([name, value]) => `${name}=${value}`),
      [...options.listen_fds, ...keepFds]);
  } catch (error) {
    log.line(`hot restart failed: ${error.message}`);
  }
}

// The previous image's workers, in a primary that was re-executed: each { pid, index, fd },
// fd the primary's end of its channel. They serve until #release, and are reaped here.
class OldWorkers {
  constructor(addon) {
    this.addon = addon;
    const pids = (process.env[ENV_OLD_WORKERS] || '').split(',').filter(Boolean);
    const fds = (process.env[ENV_OLD_CHECKS] || '').split(',').filter(Boolean).map(Number);
    // Not for the workers this image forks.
    delete process.env[ENV_OLD_WORKERS];
    delete process.env[ENV_OLD_CHECKS];
    this.workers = pids.map((entry, i) => {
      const [pid, index] = entry.split(':').map(Number);
      return { pid, index, fd: Number.isInteger(fds[i]) && fds[i] > 2 ? fds[i] : -1 };
    });
    // A channel inherited open by this image must not be by the workers it forks, or the old
    // worker would never see it close.
    for (const w of this.workers.filter((worker) => worker.fd >= 0)) {
      try {
        addon.closeOnExec(w.fd);
      } catch (_) {
        w.fd = -1; // not open: nothing keeps that worker, it drains by itself
      }
    }
    this.released = false;
    this.timer = null;
  }

  get count() {
    return this.workers.length;
  }

  // Closes their channels (they see the primary leave and stop) and sends each signal (TERM:
  // drain; KILL for QUIT), then waits for them; onGone(worker, how) for each as it exits.
  release(onGone, signal = 'SIGTERM') {
    if (this.released) return;
    this.released = true;
    for (const w of this.workers) {
      this.closeChannel(w);
      try {
        process.kill(w.pid, signal);
      } catch (_) {
        // gone already: the reaper sees it
      }
    }
    this.watch(onGone);
  }

  // Reaps those that exit, released or not (one may die while it still serves).
  watch(onGone) {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.workers = this.workers.filter((w) => {
        const status = this.addon.reap(w.pid);
        if (status === null) return true;
        this.closeChannel(w);
        onGone(w, status.signal ? `signal ${status.signal}` : `status ${status.code}`);
        return false;
      });
      if (this.workers.length === 0) clearInterval(this.timer);
    }, REAP_POLL_MS);
  }

  closeChannel(w) {
    if (w.fd < 0) return;
    try {
      fs.closeSync(w.fd);
    } catch (_) {
      // closed already
    }
    w.fd = -1;
  }

  // For another re-exec before they drained: those still open ride along.
  unreleased() {
    return this.workers.filter((w) => w.fd >= 0);
  }
}

// What the cluster primary (node/up_node/primary.js) is given for `up`: the old workers, the
// build, and the re-exec with the workers it has now (node:cluster Workers, each with .index)
// and the old ones still open, logging to the primary's log.
function clusterRestarts(addon, options) {
  const old = new OldWorkers(addon);
  return {
    old,
    build: (done) => build(options, done),
    reexec(workers, log) {
      // A worker whose channel is closed already is leaving: it is not handed over.
      const open = workers.filter((w) => w.process.channel && w.process.channel.fd >= 0);
      const kept = [...open.map((w) => ({ pid: w.process.pid, index: w.index, fd: w.process.channel.fd })),
        ...old.unreleased()];
      reexec(addon, options, log, {
        env: { [ENV_OLD_WORKERS]: kept.map((w) => `${w.pid}:${w.index}`).join(','),
          [ENV_OLD_CHECKS]: kept.map((w) => w.fd).join(',') },
        keepFds: kept.map((w) => w.fd),
      });
    },
  };
}

module.exports = { build, reexec, clusterRestarts };
