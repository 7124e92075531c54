'use strict';
// A process that serves: the single process (-w 0 or 1) or one cluster worker. It loads the
// compiled app (the bundle defines globalThis.Opal and stores the app in Up::Node.app),
// listens on every address, and on INT/TERM stops gracefully: no new connections, idle ones
// closed, in-flight requests finished within --shutdown-timeout, exit status 0. QUIT stops
// at once, HUP reopens the log file and reloads the certificates of HTTPS binds (tls.js). A
// single process writes the pid file and logs the "listening on" line; a worker
// tells the primary instead (primary.js).

const cluster = require('node:cluster');
const fs = require('node:fs');
const { Log, ignoreUnsupportedSignals, processTitle, banner } = require('./log');
const { createServer } = require('./server');
const { TLSBind } = require('./tls');
const { EnvBuilder } = require('./env');
const { describeThrown, bootFailed } = require('./thrown');
const { Upgrades } = require('./upgrades');
const { WorkerLink } = require('./cluster_pubsub');
const { attachRedis } = require('./redis_pubsub');
const { RequestCounters, startMetrics, delayedStop } = require('./metrics');
const { answerStats } = require('./control_server');

// Returns [the Handler, the process's Upgrades].
function loadHandler(options, log) {
  require(options.bundle);
  const Opal = globalThis.Opal;
  const Node = Opal.Up.Node;
  // With --preload the primary loaded the app too (primary.js) and runs the engines it
  // attached: the ones this worker's load attached are those, as a forked worker's are on
  // up_ruby (lib/up/pub_sub.rb's after_fork), not engines of its own.
  attachRedis(Opal, options, log, !(cluster.isWorker && options.preload));
  if (cluster.isWorker && options.preload) Opal.Up.PubSub.$after_fork();
  const errors = Node.ErrorStream.$new(log);
  const env = new EnvBuilder(Opal, options.version, options.workers > 1, errors);
  const upgrades = new Upgrades(Opal, options, log);
  // lib/up/pub_sub.rb's view of this process: its server, and in a cluster its link.
  Opal.Up.PubSub.$server_started(Node.PubSubServer.$new(upgrades.pubsub, log));
  if (cluster.isWorker) Opal.Up.PubSub['$cluster_link='](Node.PubSubLink.$new(new WorkerLink(upgrades.pubsub), false));
  return [Node.Handler.$new(Node.$app(), env, log), upgrades];
}

// "unix:///path", or SCHEME://host:port with an IPv6 host in brackets.
function url(bind, port, scheme = 'http') {
  if (bind.path) return `unix://${bind.path}`;
  return `${scheme}://${bind.ipv6 ? `[${bind.host}]` : bind.host}:${port}`;
}

// What up_ruby says when it cannot bind (Up::Bind#to_s, then Ruby's Errno message), so that
// scripts and people see one message whatever the runtime.
const BIND_ERRORS = {
  EADDRINUSE: 'Address already in use',
  EACCES: 'Permission denied',
  EADDRNOTAVAIL: 'Cannot assign requested address',
};

function bindError(bind, port, error) {
  const where = url(bind, port, 'tcp');
  const what = BIND_ERRORS[error.code] ? `${BIND_ERRORS[error.code]} - bind(2)` : error.message;
  return `cannot listen on ${where}: ${what}`;
}

// Listens on each bind in turn, so that port 0 is picked once and every other TCP address
// gets the same port. Calls done(urls) or fail(message). tlsBinds collects the HTTPS binds.
function listenAll(options, handler, upgrades, log, tlsBinds, done, fail) {
  const servers = [];
  const urls = [];
  let picked = 0;
  const next = (i) => {
    if (i === options.binds.length) {
      if (servers.length === 0) return fail('cannot listen: no address can be bound');
      return done(servers, urls);
    }
    const bind = options.binds[i];
    const port = bind.port === 0 && picked ? picked : bind.port;
    const listener = { host: bind.path ? 'localhost' : bind.host, port: port, secure: !!bind.tls };
    let tlsBind = null;
    try {
      tlsBind = bind.tls ? new TLSBind(options, bind.tls) : null;
    } catch (error) {
      return fail(error.message);
    }
    if (tlsBind) tlsBinds.push(tlsBind);
    const server = createServer(options, handler, log, listener, upgrades, tlsBind);
    server.once('error', (error) => {
      // As up_ruby's binder: an address this host does not have ("localhost" naming ::1
      // where IPv6 is off) is skipped, as long as another one is bound.
      if (bind.ipv6 && error.code === 'EADDRNOTAVAIL') return next(i + 1);
      fail(bindError(bind, port, error));
    });
    const ready = () => {
      if (!bind.path) {
        listener.port = server.address().port;
        if (bind.port === 0) picked = listener.port;
      } else if (bind.mode) {
        fs.chmodSync(bind.path, bind.mode);
      }
      servers.push(server);
      urls.push(url(bind, listener.port, bind.tls ? 'https' : 'http'));
      next(i + 1);
    };
    if (bind.path) server.listen({ path: bind.path }, ready);
    else server.listen({ host: bind.host, port: port, ipv6Only: bind.ipv6 }, ready);
  };
  next(0);
}

function run(options) {
  const log = new Log(options.log_file);
  const index = process.env.UP_WORKER_INDEX;
  const name = cluster.isWorker ? `worker ${index}` : 'up_node';
  let handler;
  let upgrades;
  try {
    [handler, upgrades] = loadHandler(options, log);
  } catch (error) {
    bootFailed(options, error);
  }
  // Start errors the user can fix (an address in use), as up_ruby reports them: one line on
  // stderr, status 1.
  const fail = (message) => {
    process.stderr.write(`up_node: ${message}\n`);
    process.exit(1);
  };
  const tlsBinds = [];
  listenAll(options, handler, upgrades, log, tlsBinds, (servers, urls) => {
    process.title = processTitle(options, cluster.isWorker ? `worker ${index}` : null, urls);
    const stop = gracefulStop(servers, upgrades, options, log, name);
    // --metrics-url: responses counted here, reported by the primary or, alone, by this process.
    let stopBegun = false;
    const counters = options.metrics_url ? new RequestCounters() : null;
    if (counters) servers.forEach((server) => counters.watch(server));
    if (counters && cluster.isWorker) answerStats(() => counters.figures());
    if (counters && !cluster.isWorker) {
      startMetrics(options, log, async () => ({ workers: 1, pid: process.pid, ...counters.figures() }), () => !stopBegun);
    }
    // A worker stops when its primary says, after the primary's --stop-delay.
    const stopSignal = cluster.isWorker ? stop : delayedStop(options, log, () => { stopBegun = true; }, stop);
    process.on('SIGINT', () => stopSignal('INT'));
    process.on('SIGTERM', () => stopSignal('TERM'));
    process.on('SIGQUIT', () => process.exit(0));
    process.on('SIGHUP', () => {
      log.reopen();
      tlsBinds.forEach((tlsBind) => tlsBind.reload(log, `HUP (${name})`));
    });
    ignoreUnsupportedSignals(log);
    // A streaming body may write from a timer after the app returned; what it raises then
    // has no request to fail. It is logged, and the process goes on serving the others.
    process.on('uncaughtException', (error) => log.line(`error outside a request: ${describeThrown(error)}`));
    if (cluster.isWorker) {
      process.on('disconnect', stop); // the primary is gone
      process.send({ listening: urls });
    } else {
      if (options.pid_file) {
        fs.writeFileSync(options.pid_file, `${process.pid}\n`);
        process.on('exit', () => fs.rmSync(options.pid_file, { force: true }));
      }
      log.line(banner(options));
      log.line(`UP! ${options.version} listening on ${urls.join(', ')} (pid ${process.pid}, node ${process.version})`);
      if (options.build_note) log.line(options.build_note);
    }
  }, fail);
}

// Returns the INT/TERM handler: close the listeners, close idle connections, say goodbye to
// WebSockets and event streams (on_shutdown, then their close), and exit 0 once every
// connection is gone (responses sent while stopping carry `connection: close`, HTTP/2
// connections get GOAWAY and close once their streams are done); past
// --shutdown-timeout the remaining connections are cut.
function gracefulStop(servers, upgrades, options, log, name) {
  let stopping = false;
  return () => {
    if (stopping) return;
    stopping = true;
    log.line(`${name} stopping (pid ${process.pid})`);
    let open = servers.length;
    const closed = () => {
      if (--open > 0) return;
      log.line(`${name} stopped`);
      process.exit(0);
    };
    for (const server of servers) {
      server.stopping = true;
      server.close(closed);
      server.closeIdleConnections();
      if (server.http2) server.http2.stop();
    }
    upgrades.stop();
    setTimeout(() => {
      servers.forEach((server) => {
        server.closeAllConnections();
        if (server.http2) server.http2.terminate();
      });
      upgrades.terminate();
    }, options.shutdown_timeout * 1000).unref();
  };
}

module.exports = { run };
