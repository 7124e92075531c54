'use strict';
// Pub/sub across the workers of -w N (docs/websockets.md, "Delivery"), over
// node:cluster's IPC channel between each worker and the primary: the two ends of up_node's
// Up::PubSub.cluster_link (opal/up/node/pub_sub_link.rb), as up_ruby's master and workers
// have theirs (lib/up/cluster/pub_sub_hub.rb, lib/up/pub_sub/worker_link.rb).
//
//   worker -> primary   P (a CLUSTER publish), E (a publish through attached engine number
//                       n), I (the worker's first subscription to a channel, or its last)
//   primary -> workers  D (a message for every worker's subscribers)
//
// A worker never delivers its own CLUSTER publish itself: it goes up and comes back with
// everyone else's, and the primary sends each worker the D messages in the order it got the
// publishes, over one ordered channel per worker. So every subscriber gets a message once,
// and a publisher's messages in the order it published them. The primary counts the
// subscriptions of every worker, so that attached engines, which live in the primary when it
// loaded the app (up_ruby's master does the same with --preload), hear of a channel once for
// the whole cluster: first subscriber in, last out, a dead worker's subscriptions counted out.
//
// A message crosses as a JS string and whether it is one char a byte (an Opal String marked
// binary), so its bytes arrive as they were.

const { plain } = require('./exchange');

// { m, b }: an Opal String as it travels.
function wire(message) {
  const internal = message.internal_encoding;
  const bytes = internal != null && (internal.name === 'ASCII-8BIT' || internal.name === 'ISO-8859-1');
  return { m: plain(message), b: bytes };
}

function bufferOf(message) {
  return Buffer.from(message.m, message.b ? 'latin1' : 'utf8');
}

// A worker's end. pubsub: its PubSub, which gets what the primary fans out.
class WorkerLink {
  constructor(pubsub) {
    this.pubsub = pubsub;
    process.on('message', (message) => {
      if (message !== null && typeof message === 'object' && message.up === 'D') {
        pubsub.publish(message.c, bufferOf(message));
      }
    });
  }

  publish(channel, message) {
    this.send({ up: 'P', c: String(channel), ...wire(message) });
  }

  enginePublish(number, channel, message) {
    this.send({ up: 'E', n: number, c: String(channel), ...wire(message) });
  }

  interest(channel, pattern, on) {
    this.send({ up: 'I', c: String(channel), p: pattern, on: on });
  }

  // The primary gone means this worker is stopping (worker.js): what it sends then is lost.
  send(message) {
    if (process.connected) process.send(message);
  }
}

// The primary's end. Opal: the runtime when the primary loaded the app (engines live there),
// else null (then interest is counted for nothing and E publishes are dropped: no engine was
// attached in a primary that has no app).
class Hub {
  constructor(Opal, log) {
    this.Opal = Opal;
    this.log = log;
    this.workers = new Set();
    this.interests = new Map(); // worker => Set of channel keys it holds
  }

  // worker: a node:cluster Worker, listened to until it exits (#gone).
  attach(worker) {
    this.workers.add(worker);
    this.interests.set(worker, new Set());
    worker.on('message', (message) => {
      if (message === null || typeof message !== 'object') return;
      if (message.up === 'P') this.deliver(message.c, message);
      else if (message.up === 'E') this.engine(message);
      else if (message.up === 'I') this.interest(worker, message.c, message.p, message.on);
    });
  }

  // A worker that exits takes its subscriptions with it.
  gone(worker) {
    const held = this.interests.get(worker);
    this.workers.delete(worker);
    this.interests.delete(worker);
    if (held === undefined) return;
    for (const key of held) this.tell(key.slice(1), key[0] === 'p', false);
  }

  // ---- Up::PubSub.cluster_link's side in the primary (pub_sub_link.rb, master)

  publish(channel, message) {
    this.deliverAll(channel, message);
  }

  deliverAll(channel, message) {
    this.deliver(String(channel), wire(message));
  }

  // ---- the workers' messages

  deliver(channel, message) {
    const down = { up: 'D', c: channel, m: message.m, b: message.b };
    for (const worker of this.workers) {
      if (worker.isConnected()) worker.send(down);
    }
  }

  engine(message) {
    const Opal = this.Opal;
    if (Opal === null) return;
    const engine = Opal.Up.PubSub.$engine_at(message.n);
    if (engine === Opal.nil) return;
    const text = bufferOf(message);
    const data = message.b ? Opal.enc(text.toString('latin1'), 'binary') : message.m;
    this.safely(() => engine.$publish(message.c, data));
  }

  interest(worker, channel, pattern, on) {
    const held = this.interests.get(worker);
    if (held === undefined) return;
    const key = `${pattern ? 'p' : 'c'}${channel}`;
    if (on === held.has(key)) return;
    if (on) held.add(key);
    else held.delete(key);
    this.tell(channel, pattern, on);
  }

  tell(channel, pattern, on) {
    const Opal = this.Opal;
    if (Opal === null) return;
    this.safely(() => Opal.Up.PubSub.$cluster_interest(channel, pattern ? 'glob' : Opal.nil, on));
  }

  safely(fn) {
    try {
      fn();
    } catch (error) {
      const Opal = this.Opal;
      this.log.line(`pub/sub engine: ${Opal && error.$$class ? Opal.Up.Node.$describe(error) : String(error)}`);
    }
  }
}

module.exports = { WorkerLink, Hub };
