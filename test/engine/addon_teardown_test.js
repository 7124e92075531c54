'use strict';
// The addon (up.node, built with the sanitizers by the Makefile, LOOP=uv) gives back what it
// holds for a Node environment when that environment goes away: run under LeakSanitizer (the
// ASan build), a record or a handle left behind fails the run at exit.
//
// Two environments, as up has them: a worker thread, terminated while a WebSocket client is
// open and subscribed, a message on its way and the server's own subscriptions in place
// (its uv loop must then close with no handle of ours left open, or node aborts); then the
// main thread's, which subscribes and exits as a process does when its loop runs dry.
//
// The subscribe calls' handles (externals) are dropped and collected (gc) before the end:
// node never frees its own record of an external still alive when its environment ends (40
// bytes each, Node 20), and LeakSanitizer would count what those records point to, ours
// included, as theirs.
//
// Usage: node --expose-gc addon_teardown_test.js path/to/up.node
const assert = require('node:assert');
const net = require('node:net');
const { Worker, isMainThread, parentPort, workerData } = require('node:worker_threads');

const DEADLINE_MS = 20000;
const PUBSUB_CALLBACK = 3; // the delivery of a block subscription (pubsub.c)
const WS_TEXT = 0;
const EV_OPEN = 0;

// A server with upgrades and three subscriptions of its own, two to one channel. Returns the
// addon and the meta array.
function serve(onRequest, onEvent) {
  const addon = require(workerData ? workerData.addon : process.argv[2]);
  const meta = addon.createServer({}, onRequest, (line) => process.stderr.write(`${line}\n`));
  addon.upgrades({}, onEvent);
  const subscribed = [
    addon.subscribe(null, 'news', false, PUBSUB_CALLBACK, 1),
    addon.subscribe(null, 'news.*', true, PUBSUB_CALLBACK, 2),
    addon.subscribe(null, 'news', false, PUBSUB_CALLBACK, 3)
  ];
  for (const r of subscribed) assert.ok(Array.isArray(r) && r.length === 3, 'subscribed');
  assert.strictEqual(subscribed[2][1], 0, "the server's own are not replaced but added");
  return { addon, meta };
}

function worker() {
  let client = null;
  const { addon, meta } = serve(
    () => {
      client = addon.upgrade(meta[0], []);
      assert.strictEqual(typeof client, 'number', `upgraded: ${client}`);
    },
    (kind) => {
      if (kind !== EV_OPEN) return;
      assert.ok(Array.isArray(addon.subscribe(client, 'room', false, WS_TEXT, 4)), 'client subscribed');
      addon.publish('room', 'hello', true);
      addon.publish('news', 'queued for the server', true);
      setImmediate(() => {
        gc(); // the handles are garbage: see above
        parentPort.postMessage({ subscribed: true });
      });
    });
  parentPort.postMessage({ port: addon.listen('127.0.0.1', 0) });
}

function main() {
  const timer = setTimeout(() => {
    process.stderr.write('addon_teardown: timed out\n');
    process.exit(2);
  }, DEADLINE_MS);
  // Loaded here first, so that the worker's end does not unload it: node unloads an addon
  // with the last environment that loaded it, and the uv close callbacks of its handles run
  // after that, in code no longer mapped (a crash; the report of branch addon-hygiene).
  require(process.argv[2]);
  const w = new Worker(__filename, { workerData: { addon: process.argv[2] } });
  let sock = null;
  let got = '';
  let subscribed = false;
  let terminating = false;
  // Once the client has its 101 and is subscribed, the worker goes with the client open.
  const terminateWhenReady = () => {
    if (terminating || !subscribed || !got.startsWith('HTTP/1.1 101 ')) return;
    terminating = true;
    w.terminate();
  };
  w.on('error', (e) => {
    throw e;
  });
  w.on('message', (m) => {
    if (m.port !== undefined) {
      sock = net.connect(m.port, '127.0.0.1', () => {
        sock.write('GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n' +
                   'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
      });
      sock.on('data', (d) => {
        got += d.toString('latin1');
        terminateWhenReady();
      });
      sock.on('error', () => {});
    } else if (m.subscribed) {
      subscribed = true;
      terminateWhenReady();
    }
  });
  w.on('exit', () => {
    assert.ok(terminating, 'the worker ran until it was terminated');
    sock.destroy();
    clearTimeout(timer);
    serve(() => {}, () => {});
    gc();
    process.stdout.write('addon_teardown: 2 environments torn down (leaks checked at exit)\n');
  });
}

if (isMainThread) main();
else worker();
