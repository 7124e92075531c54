'use strict';
// The cluster primary (-w N, N > 1): forks N workers (main.js again, which serves through
// worker.js) and supervises them. It serves nothing; node:cluster shares the listening sockets
// the workers ask for and spreads connections among them (round-robin). It fans pub/sub
// messages out to the workers (cluster_pubsub.js); with --preload (the default, as up_ruby's
// master) it loads the app too, so that the pub/sub engines config.ru attaches live here and
// hear of each channel once for the cluster.
//
//   a worker that dies after it served   is replaced at once
//   a worker that dies before it served  (the app does not load, an address is taken) stops
//                                        everything with status 1: a restart would fail too;
//                                        but while the workers of a previous image or phase
//                                        still serve, it is tried again after a back-off
//   INT, TERM                            graceful: each worker stops (worker.js) and the
//                                        primary exits 0 when they are gone; workers still
//                                        running --shutdown-timeout + 5 s later are killed
//   QUIT                                 workers are killed, exit 0
//   HUP                                  the log file is reopened here and in every worker,
//                                        and the workers reload their certificates (tls.js)
//
// `up` (node/up/main.js) gives run its restarts (node/up/restart.js), and with them:
//
//   USR2        hot restart: the app is compiled, then the primary re-executes `up` in place
//               (same pid); the workers serve on, and drain once the new image's all serve
//   USR1        phased restart: the app is compiled, then one worker at a time a new one is
//               forked, and once it serves the old one drains and exits, then the next. Each
//               worker loads the app itself, so every new one serves the new code (the
//               primary's own copy, --preload's, for pub/sub engines, stays the old one)
//   TTIN, TTOU  one worker more, one fewer (never below one)
//
// up_node has none of these: they are logged and ignored there.
//
// run returns the primary's actions as named functions, the signals' and a control
// endpoint's: stop(), halt(), reopenLogs(), reloadCertificates(), and for `up` hotRestart(),
// phasedRestart(), addWorker(), removeWorker(). Each takes what to call the request in the log
// (the signal's name by default).

const cluster = require('node:cluster');
const fs = require('node:fs');
const { Log, ignoreUnsupportedSignals, processTitle, banner } = require('./log');
const { Hub } = require('./cluster_pubsub');
const { attachRedis } = require('./redis_pubsub');
const { bootFailed, loadFailure } = require('./thrown');
const { startMetrics, delayedStop } = require('./metrics');
const { clusterReport } = require('./control_server');

// Past the workers' own --shutdown-timeout, before they are killed.
const KILL_GRACE_MS = 5000;
// Back-off before a failed boot is tried again, while others serve: it doubles, up to MAX.
const BOOT_BACKOFF_MS = 500;
const BOOT_BACKOFF_MAX_MS = 30000;

// The pub/sub hub, with the app loaded when --preload asks for it (the workers load it
// again: Node forks no copy). An app that cannot load stops the start here, as a worker would;
// after a hot restart the old workers serve on instead, and the new ones try themselves.
function startHub(options, log, restarts) {
  if (!options.preload) return new Hub(null, log);
  try {
    require(options.bundle);
  } catch (error) {
    if (!restarts || restarts.old.count === 0) bootFailed(options, error);
    log.line(`hot restart: the app does not load; the old workers serve on: ${loadFailure(error)}`);
    return new Hub(null, log);
  }
  const Opal = globalThis.Opal;
  attachRedis(Opal, options, log, true); // --redis-url: run here, as up_ruby's master runs it
  const hub = new Hub(Opal, log);
  Opal.Up.PubSub['$cluster_link='](Opal.Up.Node.PubSubLink.$new(hub, true));
  return hub;
}

function run(options, restarts = null) {
  const log = new Log(options.log_file);
  const hub = startHub(options, log, restarts);
  const old = restarts ? restarts.old : null;
  const slots = []; // the worker serving each index
  const failures = []; // boots failed in a row, per index
  let count = options.workers;
  let stopping = false;
  let busy = null; // the restart under way: 'hot' or 'phased'
  let phase = null; // a phased restart: the index it is at, its new worker, the old it waits for
  let status = 0;
  let announced = false;
  let stopBegun = false; // from the first INT/TERM on, through --stop-delay: /ready says 503

  const everyWorker = () => Object.values(cluster.workers).filter((worker) => !worker.isDead());

  const finish = () => {
    if (options.pid_file && announced) fs.rmSync(options.pid_file, { force: true });
    log.line('stopped');
    process.exit(status);
  };
  const maybeFinish = () => {
    if (stopping && everyWorker().length === 0 && (!old || old.count === 0)) finish();
  };

  const oldGone = (w, how) => {
    log.line(`worker ${w.index} (pid ${w.pid}) stopped (${how})`);
    maybeFinish();
  };

  const stop = (signal, exitStatus) => {
    if (stopping) return;
    stopping = true;
    stopBegun = true;
    status = exitStatus;
    phase = null;
    if (old) old.release(oldGone, signal);
    const workers = everyWorker();
    workers.forEach((worker) => worker.process.kill(signal));
    setTimeout(() => everyWorker().forEach((worker) => worker.process.kill('SIGKILL')),
      options.shutdown_timeout * 1000 + KILL_GRACE_MS).unref();
    maybeFinish();
  };

  // Asks a worker to drain and exit; it is no longer counted, nor replaced.
  const retire = (worker) => {
    worker.retiring = true;
    worker.process.kill('SIGTERM');
    setTimeout(() => !worker.isDead() && worker.process.kill('SIGKILL'),
      options.shutdown_timeout * 1000 + KILL_GRACE_MS).unref();
  };

  // Once a new worker serves at every index, the previous image's drain.
  const releaseOld = () => {
    if (!old || old.count === 0 || old.released) return;
    for (let i = 0; i < count; i++) if (!slots[i] || !slots[i].served) return;
    log.line(`hot restart: ${count} new workers serve; ${old.count} old workers drain`);
    old.release(oldGone);
  };

  const fork = (index) => {
    const worker = cluster.fork({ UP_WORKER_INDEX: String(index) });
    worker.index = index;
    worker.served = false;
    hub.attach(worker);
    worker.on('message', (message) => {
      if (!message.listening) return;
      worker.served = true;
      failures[index] = 0;
      log.line(`worker ${index} (pid ${worker.process.pid}) booted`);
      if (phase && phase.fresh === worker) phaseServes(worker);
      releaseOld();
      if (announced) return;
      announced = true;
      if (options.pid_file) fs.writeFileSync(options.pid_file, `${process.pid}\n`);
      process.title = processTitle(options, 'master', message.listening);
      log.line(banner(options));
      log.line(`UP! ${options.version} master ${process.pid} listening on ${message.listening.join(', ')} ` +
        `(workers ${count}, node ${process.version})`);
      if (options.build_note) log.line(options.build_note);
    });
    return worker;
  };

  // ---------------------------------------------------------------- phased restart

  // The next index still on the old code gets a new worker beside its old one.
  const phaseNext = () => {
    if (!phase || stopping) return;
    if (phase.index >= count) {
      log.line(`phased restart done: ${count} workers replaced`);
      phase = null;
      busy = null;
      return;
    }
    phase.fresh = fork(phase.index);
  };

  const phaseServes = (fresh) => {
    const stale = slots[fresh.index];
    slots[fresh.index] = fresh;
    phase.fresh = null;
    if (!stale || stale.isDead()) {
      phase.index++;
      return phaseNext();
    }
    log.line(`phased restart: worker ${fresh.index} (pid ${fresh.process.pid}) serves; pid ${stale.process.pid} drains`);
    phase.waitFor = stale;
    retire(stale);
  };

  // ---------------------------------------------------------------- exits

  cluster.on('exit', (worker, code, signal) => {
    hub.gone(worker);
    const index = worker.index;
    const how = signal ? `signal ${signal}` : `status ${code}`;
    if (stopping) return maybeFinish();
    if (worker.retiring) {
      log.line(`worker ${index} (pid ${worker.process.pid}) stopped`);
      if (phase && phase.waitFor === worker) {
        phase.waitFor = null;
        phase.index++;
        phaseNext();
      }
      return;
    }
    if (phase && phase.fresh === worker) {
      log.line(`worker ${index} (pid ${worker.process.pid}) exited before it served (${how}); phased restart ` +
        'stopped: workers not yet replaced keep serving the old code; fix the app and send USR1 again');
      phase = null;
      busy = null;
      return;
    }
    if (slots[index] !== worker) return;
    if (worker.served) {
      log.line(`worker ${index} (pid ${worker.process.pid}) exited (${how}); starting a new one`);
      slots[index] = fork(index);
    } else if (old && old.count > 0) {
      const n = failures[index] = (failures[index] || 0) + 1;
      const delay = Math.min(BOOT_BACKOFF_MS * 2 ** (n - 1), BOOT_BACKOFF_MAX_MS);
      log.line(`worker ${index} (pid ${worker.process.pid}) failed to boot (${how}; ${n} in a row); the old workers ` +
        `serve on; next try in ${delay / 1000} s`);
      slots[index] = null;
      setTimeout(() => {
        if (!stopping && index < count && !slots[index]) slots[index] = fork(index);
      }, delay);
    } else {
      log.line(`worker ${index} exited before it served (${how}); stopping`);
      stop('SIGTERM', 1);
    }
  });

  // ---------------------------------------------------------------- actions

  const unlessBusy = (who, then) => {
    if (stopping) return log.line(`${who}: ignored while stopping`);
    if (busy) return log.line(`${who}: a ${busy} restart is under way; ignored`);
    then();
  };

  const actions = {
    stop: () => stop('SIGTERM', 0),
    halt: () => stop('SIGKILL', 0),
    reopenLogs: () => {
      log.reopen();
      everyWorker().forEach((worker) => worker.process.kill('SIGHUP'));
    },
  };
  // A worker reloads its certificates on the HUP that reopens its log.
  actions.reloadCertificates = actions.reopenLogs;

  if (restarts) {
    Object.assign(actions, {
      hotRestart: (who = 'USR2') => unlessBusy(who, () => {
        busy = 'hot';
        log.line(`${who}: hot restart: compiling the app, then re-executing the primary in place (pid ${process.pid}); ` +
          'the workers serve until new ones are up');
        restarts.build((error) => {
          busy = null;
          if (stopping) return;
          if (error) return log.line(`${who}: hot restart: the app does not compile; the workers serve on: ${error}`);
          restarts.reexec(everyWorker(), log);
        });
      }),
      phasedRestart: (who = 'USR1') => unlessBusy(who, () => {
        busy = 'phased';
        log.line(`${who}: phased restart: compiling the app, then replacing ${count} workers one at a time`);
        restarts.build((error) => {
          if (stopping) return;
          if (error) {
            busy = null;
            return log.line(`${who}: phased restart: the app does not compile; the workers serve on: ${error}`);
          }
          phase = { index: 0, fresh: null, waitFor: null };
          phaseNext();
        });
      }),
      addWorker: (who = 'TTIN') => unlessBusy(who, () => {
        count++;
        log.line(`${who}: workers ${count}`);
        slots[count - 1] = fork(count - 1);
      }),
      removeWorker: (who = 'TTOU') => unlessBusy(who, () => {
        if (count === 1) return log.line(`${who}: one worker left; not stopping it`);
        count--;
        log.line(`${who}: workers ${count}`);
        const worker = slots[count];
        slots.length = count;
        if (worker && !worker.isDead()) retire(worker);
      }),
    });
  }

  process.title = processTitle(options, 'master', []);
  const stopSignal = delayedStop(options, log, () => { stopBegun = true; }, () => actions.stop());
  process.on('SIGINT', () => stopSignal('INT'));
  process.on('SIGTERM', () => stopSignal('TERM'));
  process.on('SIGQUIT', () => actions.halt());
  process.on('SIGHUP', () => actions.reopenLogs());
  if (restarts) {
    process.on('SIGUSR2', () => actions.hotRestart());
    process.on('SIGUSR1', () => actions.phasedRestart());
    process.on('SIGTTIN', () => actions.addWorker());
    process.on('SIGTTOU', () => actions.removeWorker());
    if (old.count > 0) {
      log.line(`hot restart: ${old.count} old workers serve until the new ones are up`);
      old.watch(oldGone);
    }
  } else {
    ignoreUnsupportedSignals(log);
  }
  require('./control_server').controlPrimary(options, log, slots); // --control-url (`up` only)
  // Ready: a worker serves at every index, and no stop has begun.
  const ready = () => !stopBegun && slots.slice(0, count).every((worker) => worker && worker.served && !worker.isDead());
  if (options.metrics_url) startMetrics(options, log, clusterReport(options, slots), ready);
  for (let index = 0; index < count; index++) slots[index] = fork(index);
  return actions;
}

module.exports = { run };
