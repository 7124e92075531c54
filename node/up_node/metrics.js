'use strict';
// The metrics endpoint of up_node and `up` (--metrics-url): up_ruby's Up::Metrics::App and
// Up::Metrics::Exposition on Node's http module, with the same paths and metric names, so one
// dashboard and one probe fit every runtime. It lives in the single process or the cluster
// primary (primary.js, `up`'s too), never in a worker; a primary asks its workers for their
// figures at each scrape, over control_server.js's channel.
//
//   GET /metrics  the Prometheus text format (version 0.0.4)
//   GET /live     200 while the process runs
//   GET /ready    200 while it takes requests; 503 before it serves and from the moment a
//                 stop begins (through --stop-delay)
//
// A serving process counts its responses by status and their durations (RequestCounters)
// only when --metrics-url is given: up_node's from its http servers (watch), `up`'s from each
// exchange the app answered (node/up/exchange.js calls record).

const fs = require('node:fs');
const http = require('node:http');

const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
// Upper bounds of the duration buckets in seconds, as ext/up/ruby/metrics.c has them.
const BOUNDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const PAGE_SIZE = 4096;

// Responses by status and a histogram of how long requests took, for one process.
class RequestCounters {
  constructor() {
    this.statuses = {};
    this.buckets = new Array(BOUNDS.length + 1).fill(0);
    this.sum = 0;
  }

  // Counts each response server answers, from its request to its last byte handed over.
  watch(server) {
    server.prependListener('request', (req, res) => {
      const started = process.hrtime.bigint();
      res.once('finish', () => this.record(res.statusCode, Number(process.hrtime.bigint() - started) / 1e9));
    });
  }

  record(status, seconds) {
    this.statuses[status] = (this.statuses[status] || 0) + 1;
    let b = 0;
    while (b < BOUNDS.length && seconds > BOUNDS[b]) b++;
    this.buckets[b]++;
    this.sum += seconds;
  }

  // In the shape of up_ruby's Server#stats with metrics on.
  figures() {
    const requests = Object.values(this.statuses).reduce((a, n) => a + n, 0);
    return { requests, statuses: this.statuses, duration_bounds: BOUNDS, duration_buckets: this.buckets,
      duration_sum: this.sum };
  }
}

// Resident bytes of a process, from Linux's /proc/PID/statm; null when it is gone.
function rss(pid) {
  try {
    return Number(fs.readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]) * PAGE_SIZE;
  } catch (_) {
    return null;
  }
}

// Per-worker families from the figures: name, type, key, help (as Up::Metrics::Exposition).
const PER_WORKER = [
  ['up_connections', 'gauge', 'connections', 'Open client connections'],
  ['up_websocket_clients', 'gauge', 'websockets', 'Open WebSocket connections'],
  ['up_sse_clients', 'gauge', 'event_streams', 'Open server-sent event streams'],
];

// The text of one scrape. stats: { workers, booted_workers?, worker_status?: [{ index, pid,
// restarts, last_status }] } or a single process's { pid, ...figures }.
function exposition(stats, ready) {
  let out = '';
  const family = (name, type, help) => { out += `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n`; };
  const sample = (name, labels, value) => {
    const pairs = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
    out += `${name}${pairs.length ? `{${pairs.join(',')}}` : ''} ${value}\n`;
  };
  const workers = stats.worker_status
    ? stats.worker_status.map((w) => ({ labels: { worker: w.index }, pid: w.pid, restarts: w.restarts, status: w.last_status || {} }))
    : [{ labels: { worker: 0 }, pid: stats.pid, restarts: 0, status: stats }];

  family('up_ready', 'gauge', '1 while the server takes requests, 0 once a stop begins');
  sample('up_ready', {}, ready ? 1 : 0);
  family('up_workers', 'gauge', 'Worker processes asked for');
  sample('up_workers', {}, stats.workers);
  family('up_workers_booted', 'gauge', 'Worker processes serving');
  sample('up_workers_booted', {}, stats.booted_workers === undefined ? 1 : stats.booted_workers);
  family('up_worker_restarts_total', 'counter', 'Workers started again after the first');
  workers.forEach((w) => sample('up_worker_restarts_total', w.labels, w.restarts));
  family('up_resident_memory_bytes', 'gauge', 'Resident memory of each worker process');
  workers.forEach((w) => { const bytes = rss(w.pid); if (bytes !== null) sample('up_resident_memory_bytes', w.labels, bytes); });
  family('up_requests_total', 'counter', 'Responses sent, by status (0: closed before a status was sent)');
  workers.forEach((w) => Object.entries(w.status.statuses || {})
    .forEach(([code, n]) => sample('up_requests_total', { ...w.labels, status: code }, n)));
  const name = 'up_request_duration_seconds';
  family(name, 'histogram', "Time from a request's start to its response handed to the loop");
  workers.forEach((w) => {
    const s = w.status;
    if (!s.duration_buckets) return;
    let total = 0;
    s.duration_buckets.forEach((n, i) => {
      total += n;
      sample(`${name}_bucket`, { ...w.labels, le: i < s.duration_bounds.length ? s.duration_bounds[i] : '+Inf' }, total);
    });
    sample(`${name}_sum`, w.labels, s.duration_sum);
    sample(`${name}_count`, w.labels, total);
  });
  for (const [metric, type, key, help] of PER_WORKER) {
    if (!workers.some((w) => w.status[key] !== undefined)) continue;
    family(metric, type, help);
    workers.forEach((w) => { if (w.status[key] !== undefined) sample(metric, w.labels, w.status[key]); });
  }
  return out;
}

// --stop-delay: returns the INT/TERM handler of a process that stops with stop(). The first
// signal makes notReady() (so /ready says 503) and stop() follows the delay later; a second
// one, or no delay, stops at once.
function delayedStop(options, log, notReady, stop) {
  let delayed = false;
  return (signal) => {
    notReady();
    if (delayed || !(options.stop_delay > 0)) return stop();
    delayed = true;
    log.line(`${signal}: not ready; serving ${options.stop_delay} s more before stopping (--stop-delay)`);
    setTimeout(stop, options.stop_delay * 1000);
  };
}

// tcp://HOST:PORT or unix://PATH (Up::Options checked the form) as listen() takes it.
function address(url) {
  if (url.startsWith('unix://')) return { path: url.slice('unix://'.length) };
  const match = /^tcp:\/\/\[?([^\]]*)\]?:(\d+)$/.exec(url);
  return { host: match[1], port: Number(match[2]) };
}

// Serves the endpoint; report() is a Promise of the stats, ready() says what /ready says.
// Logs "metrics on URL" once it listens; a URL it cannot listen on stops the process.
function startMetrics(options, log, report, ready) {
  const where = address(options.metrics_url);
  const text = (res, status, body, headers = {}) => {
    res.writeHead(status, { 'content-type': 'text/plain', ...headers });
    res.end(body);
  };
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return text(res, 405, 'GET or HEAD\n', { allow: 'GET, HEAD' });
    const path = new URL(req.url, 'http://metrics').pathname;
    if (path === '/metrics') {
      return report().then((stats) => text(res, 200, exposition(stats, ready()), { 'content-type': CONTENT_TYPE }),
        (error) => text(res, 500, `${error && error.message}\n`));
    }
    if (path === '/live') return text(res, 200, 'live\n');
    if (path === '/ready') return ready() ? text(res, 200, 'ready\n') : text(res, 503, 'not ready\n');
    text(res, 404, 'try /metrics, /live or /ready\n');
  });
  server.on('error', (error) => {
    log.line(`cannot listen for metrics on ${options.metrics_url}: ${error.message}`);
    process.exit(1);
  });
  const listening = () => {
    const a = server.address();
    const url = where.path ? `unix://${where.path}` : `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
    log.line(`metrics on ${url} (/metrics, /live, /ready)`);
  };
  if (where.path) {
    process.on('exit', () => fs.rmSync(where.path, { force: true }));
    server.listen(where.path, listening);
  } else {
    server.listen(where.port, where.host, listening);
  }
  server.unref();
  return server;
}

module.exports = { RequestCounters, startMetrics, delayedStop };
