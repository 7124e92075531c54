'use strict';
// The control endpoint (--control-url) of `up`: up_ruby's Up::ControlApp on Node's http
// module, with the same paths, token and JSON, so exe/upctl works unchanged. It lives in the
// single process or the cluster primary (primary.js), never in a worker.
//
//   GET|POST /stats           the figures (below), as JSON
//   /restart, /phased-restart, /stop, /halt, /reopen-logs, /reload-certs
//                             USR2, USR1, TERM, QUIT, HUP, HUP sent to this very process once
//                             the answer { ok: true, signal } is out, so they mean what a
//                             `kill` means (the process's own signal handlers act)
//
// Every request needs the token (?token= or Authorization: Bearer); without --control-token
// one is made and logged. Stats: started_at, uptime, pid, workers; a single process adds its
// engine's figures (the addon's stats(): requests, static_files, connections); a primary
// adds phase, booted_workers and per worker worker_status (index, pid, phase, booted,
// started_at, last_checkin, restarts, last_status: the worker's figures), asked of each
// worker over node:cluster's channel when the stats are asked for (a message { up: 'S?', id }
// answered with { up: 'S', id, status }), waiting at most GATHER_MS for them.

const cluster = require('node:cluster');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');

const ACTIONS = {
  '/restart': 'USR2',
  '/phased-restart': 'USR1',
  '/stop': 'TERM',
  '/halt': 'QUIT',
  '/reopen-logs': 'HUP',
  '/reload-certs': 'HUP',
};
// How long the primary waits for its workers' figures; one that has not answered by then is
// reported with the figures it sent last.
const GATHER_MS = 1000;

// Time.now.utc.iso8601's shape: no fraction.
function iso8601(date) {
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

// Rack::Utils.secure_compare: the same length, then every byte looked at.
function tokenMatches(given, token) {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

function givenToken(req, url) {
  const query = url.searchParams.get('token');
  if (query !== null) return query;
  const match = /^Bearer (.+)$/.exec(req.headers.authorization || '');
  return match ? match[1] : null;
}

// options.control: { host, port } or { path } (lib/up/node/addon_launcher.rb parsed the URL);
// report(): a Promise of the figures after started_at and uptime. Logs "control on URL" once
// it listens; a URL it cannot listen on stops the process with status 1.
function startControl(options, log, report) {
  const where = options.control;
  // A token Up::Node::AddonLauncher made (or kept across a hot restart) is logged as one made here.
  const made = !options.control_token || options.control_token_made;
  const token = options.control_token || crypto.randomBytes(16).toString('hex');
  const started = new Date();
  const startedAt = process.hrtime.bigint();

  const stats = async () => ({
    started_at: iso8601(started),
    // Seconds to the nanosecond: never a whole number, so JSON always writes it as a Float.
    uptime: Number(process.hrtime.bigint() - startedAt) / 1e9,
    ...(await report()),
  });

  const answer = (res, status, body, then) => {
    res.writeHead(status, { 'content-type': 'application/json', connection: 'close' });
    res.end(`${JSON.stringify(body)}\n`, then);
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://control');
    const given = givenToken(req, url);
    if (given === null || !tokenMatches(given, token)) return answer(res, 403, { error: 'wrong or missing token' });
    if (req.method !== 'GET' && req.method !== 'POST') return answer(res, 405, { error: 'GET or POST' });
    if (url.pathname === '/stats') {
      return stats().then((body) => answer(res, 200, body),
        (error) => answer(res, 500, { error: String(error && error.message) }));
    }
    const signal = ACTIONS[url.pathname];
    if (!signal) return answer(res, 404, { error: `no such command; try /stats, ${Object.keys(ACTIONS).join(', ')}` });
    answer(res, 200, { ok: true, signal }, () => process.kill(process.pid, `SIG${signal}`));
  });
  const name = where.path ? `unix://${where.path}` : null;
  server.on('error', (error) => {
    log.line(`cannot listen for control on ${name || `tcp://${where.host}:${where.port}`}: ${error.message}`);
    process.exit(1);
  });
  const listening = () => {
    const address = server.address();
    const url = name || `tcp://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
    log.line(`control on ${url}${made ? ` (token ${token})` : ''}`);
  };
  if (where.path) {
    // The socket file goes with the process, as up_ruby's Binder removes it.
    process.on('exit', () => fs.rmSync(where.path, { force: true }));
    server.listen(where.path, listening);
  } else {
    server.listen(where.port, where.host, listening);
  }
  server.unref(); // the endpoint never keeps a stopping process alive
  return server;
}

// A cluster worker: answers the primary's 'S?' with figures().
function answerStats(figures) {
  process.on('message', (message) => {
    if (message === null || typeof message !== 'object' || message.up !== 'S?') return;
    if (process.connected) process.send({ up: 'S', id: message.id, status: figures() });
  });
}

// The primary's report: slots is primary.js's array of node:cluster Workers by index (a slot
// holds the newest worker of its index).
function clusterReport(options, slots) {
  const seen = new Map(); // worker => { started, checkin, status }
  const forks = []; // by index: workers forked
  let next = 0;
  cluster.on('fork', (worker) => seen.set(worker, { started: new Date(), checkin: new Date(), status: {} }));
  cluster.on('online', (worker) => {
    const index = slots.indexOf(worker);
    if (index >= 0) forks[index] = (forks[index] || 0) + 1;
  });
  cluster.on('exit', (worker) => seen.delete(worker));

  const ask = (worker) => new Promise((resolve) => {
    const id = ++next;
    const listener = (message) => {
      if (message === null || typeof message !== 'object' || message.up !== 'S' || message.id !== id) return;
      done(message.status);
    };
    const timer = setTimeout(() => done(null), GATHER_MS);
    function done(status) {
      clearTimeout(timer);
      worker.off('message', listener);
      const entry = seen.get(worker);
      if (entry && status) {
        entry.status = status;
        entry.checkin = new Date();
      }
      resolve();
    }
    worker.on('message', listener);
    if (!worker.isConnected()) return done(null);
    try {
      worker.send({ up: 'S?', id });
    } catch (_) {
      done(null);
    }
  });

  return async () => {
    const workers = slots.map((worker, index) => ({ worker, index })).filter(({ worker }) => worker && !worker.isDead());
    await Promise.all(workers.map(({ worker }) => ask(worker)));
    const status = workers.map(({ worker, index }) => {
      const entry = seen.get(worker) || { started: new Date(), checkin: new Date(), status: {} };
      return {
        index, pid: worker.process.pid, phase: 0, booted: !!worker.served,
        started_at: iso8601(entry.started), last_checkin: iso8601(entry.checkin),
        restarts: Math.max((forks[index] || 1) - 1, 0), last_status: entry.status,
      };
    });
    return {
      pid: process.pid, workers: options.workers, phase: 0,
      booted_workers: status.filter((w) => w.booted).length, worker_status: status,
    };
  };
}

// The one call of a serving process (node/up/serve.js): a worker answers its primary's
// questions; a single process with --control-url serves the endpoint itself.
function serveStats(options, log, figures) {
  if (cluster.isWorker) return answerStats(figures);
  if (options.control) startControl(options, log, async () => ({ workers: 1, pid: process.pid, ...figures() }));
}

// The one call of the primary (primary.js), with its slots.
function controlPrimary(options, log, slots) {
  if (options.control) startControl(options, log, clusterReport(options, slots));
}

module.exports = { serveStats, controlPrimary, answerStats, clusterReport };
