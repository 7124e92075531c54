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
//                                        everything with status 1: a restart would fail too
//   INT, TERM                            graceful: each worker stops (worker.js) and the
//                                        primary exits 0 when they are gone; workers still
//                                        running --shutdown-timeout + 5 s later are killed
//   QUIT                                 workers are killed, exit 0
//   HUP                                  the log file is reopened here and in every worker,
//                                        and the workers reload their certificates (tls.js)

const cluster = require('node:cluster');
const fs = require('node:fs');
const { Log, ignoreUnsupportedSignals } = require('./log');
const { Hub } = require('./cluster_pubsub');
const { describeThrown } = require('./thrown');

// Past the workers' own --shutdown-timeout, before they are killed.
const KILL_GRACE_MS = 5000;

// The pub/sub hub, with the app loaded when --preload asks for it (the workers load it
// again: Node forks no copy). An app that cannot load stops the start here, as a worker would.
function startHub(options, log) {
  if (!options.preload) return new Hub(null, log);
  try {
    require(options.bundle);
  } catch (error) {
    log.line(`cannot load ${options.rackup}: ${describeThrown(error)}`);
    process.exit(1);
  }
  const Opal = globalThis.Opal;
  const hub = new Hub(Opal, log);
  Opal.Up.PubSub['$cluster_link='](Opal.Up.Node.PubSubLink.$new(hub, true));
  return hub;
}

function run(options) {
  const log = new Log(options.log_file);
  const hub = startHub(options, log);
  const slots = [];
  let stopping = false;
  let status = 0;
  let announced = false;

  const live = () => slots.filter((worker) => worker && !worker.isDead());

  const finish = () => {
    if (options.pid_file && announced) fs.rmSync(options.pid_file, { force: true });
    log.line('stopped');
    process.exit(status);
  };

  const stop = (signal, exitStatus) => {
    if (stopping) return;
    stopping = true;
    status = exitStatus;
    const workers = live();
    if (workers.length === 0) return finish();
    workers.forEach((worker) => worker.process.kill(signal));
    setTimeout(() => live().forEach((worker) => worker.process.kill('SIGKILL')),
      options.shutdown_timeout * 1000 + KILL_GRACE_MS).unref();
  };

  const fork = (index) => {
    const worker = cluster.fork({ UP_WORKER_INDEX: String(index) });
    worker.served = false;
    slots[index] = worker;
    hub.attach(worker);
    worker.on('message', (message) => {
      if (!message.listening) return;
      worker.served = true;
      log.line(`worker ${index} (pid ${worker.process.pid}) booted`);
      if (announced) return;
      announced = true;
      if (options.pid_file) fs.writeFileSync(options.pid_file, `${process.pid}\n`);
      log.line(`UP! ${options.version} master ${process.pid} listening on ${message.listening.join(', ')} ` +
        `(workers ${options.workers}, node ${process.version})`);
      log.line(options.build_note);
    });
  };

  cluster.on('exit', (worker, code, signal) => {
    hub.gone(worker);
    const index = slots.indexOf(worker);
    const how = signal ? `signal ${signal}` : `status ${code}`;
    if (stopping) {
      if (live().length === 0) finish();
    } else if (!worker.served) {
      log.line(`worker ${index} exited before it served (${how}); stopping`);
      stop('SIGTERM', 1);
    } else {
      log.line(`worker ${index} (pid ${worker.process.pid}) exited (${how}); starting a new one`);
      fork(index);
    }
  });

  process.title = `up_node master (${options.workers} workers)`;
  process.on('SIGINT', () => stop('SIGTERM', 0));
  process.on('SIGTERM', () => stop('SIGTERM', 0));
  process.on('SIGQUIT', () => stop('SIGKILL', 0));
  process.on('SIGHUP', () => {
    log.reopen();
    live().forEach((worker) => worker.process.kill('SIGHUP'));
  });
  ignoreUnsupportedSignals(log);
  require('./control_server').controlPrimary(options, log, slots); // --control-url (`up` only)
  for (let index = 0; index < options.workers; index++) fork(index);
}

module.exports = { run };
