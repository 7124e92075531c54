'use strict';
// The process that serves for `up`: loads the compiled app (the bundle stores it in
// Up::Node.app, as for up_node), gives the engine (the up.node addon, on Node's own loop) the
// limits and addresses, and hands each request to the Ruby handler (Up::Node::Handler, shared
// with up_node) through an Exchange; the upgrades an app takes are websocket.js's. Signals, as
// up_ruby's single process (or its workers) takes them:
//
//   INT, TERM    graceful stop: no new connections, idle ones closed, in-flight requests
//                finished within --shutdown-timeout, status 0. With --stop-delay one process
//                first serves on that long, its /ready saying 503 (metrics.js); a second
//                signal ends the delay. A cluster worker stops at once: the primary delayed.
//   QUIT         stop at once
//   HUP          reopen the log file, load the certificates again (certificates.js)
//   USR2, USR1   one process: restart in place (restart.js): the app is compiled, requests in
//                flight finish, then the command is re-executed (same pid) on the same sockets;
//                connections that come meanwhile wait in the backlog. A cluster worker leaves
//                them to the primary.
//   TTIN, TTOU   one process: logged and ignored (no workers)
const cluster = require('node:cluster');
const path = require('node:path');
const fs = require('node:fs');
const { Log, ignoreSignals, processTitle, banner } = require('../up_node/log');
const { escapedThrow, describeThrown, bootFailed } = require('../up_node/thrown');
const { EnvBuilder } = require('./env');
const { Exchange } = require('./exchange');
const { Upgrades } = require('./websocket');
const { WorkerLink } = require('../up_node/cluster_pubsub');
const { attachRedis } = require('../up_node/redis_pubsub');
const { tlsSettings, reloadCertificates } = require('./certificates');
const { RequestCounters, startMetrics, delayedStop } = require('../up_node/metrics');
const restart = require('./restart');

const ADDON = path.join(__dirname, '..', '..', 'lib', 'up', 'up.node');
// How often a graceful stop looks whether the last connection is gone.
const STOP_POLL_MS = 20;

// The engine's limits, from Up::Options' names and units (seconds) to the addon's.
function engineConfig(options) {
  return {
    max_head_size: options.max_head_size,
    max_headers: options.max_headers,
    max_body_size: options.max_body_size,
    head_timeout_ms: Math.round(options.head_timeout * 1000),
    body_timeout_ms: Math.round(options.body_timeout * 1000),
    keepalive_timeout_ms: Math.round(options.keepalive_timeout * 1000),
    write_timeout_ms: Math.round(options.write_timeout * 1000),
    max_pipeline: options.max_pipeline,
    // HTTP/2 beside HTTP/1.1 (ext/up/engine/http2/), unless --no-http2.
    http2: options.http2 === false ? 0 : 1,
    // Cluster workers share the listening sockets: a connection should wake one of them (a
    // hint the libuv backend cannot honour yet: they race for accept).
    exclusive_accept: options.workers > 1 ? 1 : 0,
    // Files the engine answers before the app (Up::StaticFiles#to_h; ext/up/node/static.c).
    static_files: options.static_files,
  };
}

function run(options) {
  const log = new Log(options.log_file);
  const addon = require(ADDON);
  let Node;
  let app;
  try {
    require(options.bundle);
    Node = globalThis.Opal.Up.Node;
    app = Node.$app();
  } catch (error) {
    bootFailed(options, error);
  }
  // The handler needs the env builder, which needs the addon's meta array: the request
  // callback is made first and finds the handler once requests can come (after listen).
  let handler = null;
  let meta = null;
  // served: Exchange#over's hook, set with --metrics-url.
  const server = { upgrades: null, served: null };
  // --metrics-url: the responses of the app (the engine's own answers, static files and
  // rejected requests, are in stats().requests only), reported by the primary or by this process.
  const counters = options.metrics_url ? new RequestCounters() : null;
  if (counters) server.served = (status, seconds) => counters.record(status, seconds);
  const onRequest = (head, body, remoteAddr, where, secure) => {
    const exchange = new Exchange(addon, meta, head, body, remoteAddr, where, secure, server);
    try {
      handler.$serve(exchange);
    } catch (error) {
      // The handler rescues what the app raises, so this is a bug of ours, or Opal's
      // uncaught `return` (thrown.js). Logged as up_node logs it; the addon would log it too,
      // with less to say.
      const what = escapedThrow(error) ? `${exchange.method} ${exchange.target}` : "up's handler";
      log.line(`error in ${what}: ${describeThrown(error)}`);
      exchange.fail();
    }
  };
  meta = addon.createServer(engineConfig(options), onRequest, (line) => log.line(line));
  const builder = new EnvBuilder(globalThis.Opal, options.version, options.workers > 1, Node.ErrorStream.$new(log), meta);
  handler = Node.Handler.$new(app, builder, log);
  server.upgrades = startUpgrades(addon, options, log);

  // The sockets Up::Node::AddonLauncher bound (Up::Binder), inherited across exec and fork,
  // each with its TLS settings or null (listen_tls).
  try {
    options.listen_fds.forEach((fd, i) => {
      const tls = options.listen_tls[i];
      try {
        addon.adopt(fd, tlsSettings(tls));
      } catch (error) {
        // A certificate's own message names its file, as up_ruby's does.
        if (tls) error.message = `${options.listen_urls[i]}: ${error.message}`;
        throw error;
      }
    });
  } catch (error) {
    process.stderr.write(`up: cannot listen: ${error.message}\n`);
    process.exit(1);
  }
  const urls = options.listen_urls;
  const index = process.env.UP_WORKER_INDEX;
  const name = cluster.isWorker ? `worker ${index}` : 'up';
  process.title = processTitle(options, cluster.isWorker ? `worker ${index}` : null, urls);
  const controls = signalControls(addon, options, log, name);
  // --stop-delay: a worker stops when its primary says, after the primary's delay.
  let stopBegun = false;
  const stopSignal = cluster.isWorker
    ? () => controls.stop()
    : delayedStop(options, log, () => { stopBegun = true; }, () => controls.stop());
  process.on('SIGINT', () => stopSignal('INT'));
  process.on('SIGTERM', () => stopSignal('TERM'));
  process.on('SIGQUIT', () => controls.halt());
  process.on('SIGHUP', () => {
    controls.reopenLogs();
    controls.reloadCertificates();
  });
  if (cluster.isWorker) {
    ignoreSignals(log, ['SIGUSR1', 'SIGUSR2', 'SIGTTIN', 'SIGTTOU'], (signal) => `${name}: ${signal} is for the primary (pid ${process.ppid}); ignored`);
  } else {
    process.on('SIGUSR2', () => controls.hotRestart('USR2'));
    process.on('SIGUSR1', () => controls.hotRestart('USR1 (one process: a phased restart is a restart in place)'));
    ignoreSignals(log, ['SIGTTIN', 'SIGTTOU'], (signal) => `${signal}: one process (-w ${options.workers}), no worker to add or remove; ignored`);
  }
  // --access-log, and the figures for --control-url and --metrics-url (here, or asked by the
  // primary); the engine's count of requests wins over the app's.
  require('./access_log').startAccessLog(addon, options, log, name);
  const figures = counters ? () => ({ ...counters.figures(), ...addon.stats() }) : () => addon.stats();
  require('../up_node/control_server').serveStats(options, log, figures);
  if (counters && !cluster.isWorker) {
    startMetrics(options, log, async () => ({ workers: 1, pid: process.pid, ...figures() }), () => !stopBegun);
  }
  // A streaming body may write from a timer after the app returned; what it raises then has
  // no request to fail. It is logged, and the process goes on serving the others.
  process.on('uncaughtException', (error) => log.line(`error outside a request: ${describeThrown(error)}`));
  if (cluster.isWorker) {
    process.on('disconnect', () => controls.stop()); // the primary is gone (or let go of us)
    process.send({ listening: urls });
    return controls;
  }
  if (options.pid_file) {
    fs.writeFileSync(options.pid_file, `${process.pid}\n`);
    process.on('exit', () => fs.rmSync(options.pid_file, { force: true }));
  }
  log.line(banner(options));
  log.line(`UP! ${options.version} listening on ${urls.join(', ')} (pid ${process.pid}, node ${process.version}, engine on libuv)`);
  if (options.build_note) log.line(options.build_note);
  return controls;
}

// WebSockets, event streams and pub/sub (websocket.js), and lib/up/pub_sub.rb's view of this
// process: its server, and in a cluster its link to the primary, which fans a publish out to
// every worker (node/up_node/cluster_pubsub.js, primary.js: up_node's, as the primary is).
function startUpgrades(addon, options, log) {
  const Opal = globalThis.Opal;
  const Node = Opal.Up.Node;
  // With --preload the primary loaded the app too and runs the engines it attached: the ones
  // this worker's load attached are those (lib/up/pub_sub.rb's after_fork).
  attachRedis(Opal, options, log, !(cluster.isWorker && options.preload));
  if (cluster.isWorker && options.preload) Opal.Up.PubSub.$after_fork();
  const upgrades = new Upgrades(Opal, addon, options, log);
  Opal.Up.PubSub.$server_started(Node.PubSubServer.$new(upgrades.pubsub, log));
  if (cluster.isWorker) Opal.Up.PubSub['$cluster_link='](Node.PubSubLink.$new(new WorkerLink(upgrades.pubsub), false));
  return upgrades;
}

// What the signals of this process do, as named actions (a control endpoint calls them too):
// stop() gracefully (INT, TERM): the engine stops accepting, closes idle connections and busy
// ones after their response; the process exits 0 once none is left, or cuts them at
// --shutdown-timeout. halt() at once (QUIT). reopenLogs() and reloadCertificates() (HUP).
// hotRestart(who) (USR2, USR1; one process): compile, drain as stop() does, re-execute.
function signalControls(addon, options, log, name) {
  let stopping = false;
  let restarting = false;
  // As up_ruby's log says it: "HUP: reloaded ..." in one process, "worker 0: reloaded ...".
  const who = (signal) => (cluster.isWorker ? name : signal);

  // Requests in flight finish (within --shutdown-timeout), then done().
  const drain = (done) => {
    addon.stop();
    const deadline = Date.now() + options.shutdown_timeout * 1000;
    const check = () => {
      if (addon.numConns() > 0 && Date.now() < deadline) return setTimeout(check, STOP_POLL_MS);
      if (addon.numConns() > 0) addon.closeAll();
      done();
    };
    check();
  };

  const controls = {
    stop() {
      if (stopping) return;
      stopping = true;
      log.line(`${name} stopping (pid ${process.pid})`);
      drain(() => {
        log.line(`${name} stopped`);
        process.exit(0);
      });
    },
    halt() {
      process.exit(0);
    },
    reopenLogs() {
      log.reopen();
    },
    reloadCertificates() {
      reloadCertificates(addon, options, log, who('HUP'));
    },
    hotRestart(signal) {
      if (stopping || restarting || cluster.isWorker) return;
      restarting = true;
      log.line(`${signal}: restarting in place once the app is compiled and requests in flight finish (pid ${process.pid})`);
      restart.build(options, (error) => {
        if (stopping) return;
        if (error) {
          restarting = false;
          log.line(`${signal}: the app does not compile; the old code serves on: ${error}`);
          return;
        }
        drain(() => {
          if (stopping) return process.exit(0); // a stop during the drain wins
          // An exec runs no exit handler: the access log's last lines are written now.
          addon.closeAccessLog();
          restart.reexec(addon, options, log);
          process.exit(1); // exec failed: the sockets were let go of
        });
      });
    },
  };
  return controls;
}

module.exports = { run };
