'use strict';
// WebSockets and event streams on `up` (docs/websockets.md): the engine's
// (ext/up/engine/websocket/websocket.c, sse/sse.c) through the addon (ext/up/node/websocket.c), with the
// interface of up_node's upgrades.js, websocket.js and sse.js that the shared Ruby side calls
// (opal/up/node/upgrader.rb, client.rb). serve.js makes one Upgrades per process; the Ruby
// side reaches it as `exchange.server.upgrades`.
//
// The engine does the protocols: the handshake check and the 101 (or the stream's head),
// framing, masking, UTF-8, close codes, pings of idle clients, heartbeats, permessage-deflate
// and back-pressure. Its events come through the addon's queue to #onEvent on Node's main
// thread, in order per connection, on_close last, so a connection's callbacks never run at
// once.
//
// The Ruby side runs on_open inside the app's request, before the engine has switched the
// connection to its new protocol (it does so once the request call returns): what the app
// writes or asks for until the engine's open event (the same turn of the loop) waits here,
// in order, and goes then.

const { flatten, plain, isUtf8 } = require('./exchange');
const { PubSub } = require('./pubsub');
const { eventFields } = require('../up_node/sse');

// The event kinds of ext/up/node/event_queue.h.
const EV = {
  OPEN: 0, TEXT: 1, BINARY: 2, DRAINED: 3, SHUTDOWN: 4, CLOSE: 5, PUBSUB_TEXT: 6, PUBSUB_BINARY: 7,
};
// A client token's slot index (UP_NODE_CLIENT_BITS).
const SLOT_MASK = (1 << 22) - 1;

// RFC 6455 §7.4.1.
const CLOSE_NORMAL = 1000;
const CLOSE_GOING_AWAY = 1001;

// Whether an Opal String goes as a binary frame: a binary (ASCII-8BIT) String does, every
// other one is text (as up_node's websocket.js).
function isBinary(data) {
  const encoding = data.encoding;
  return encoding !== undefined && encoding !== null && encoding.name === 'ASCII-8BIT';
}

// A binary String's bytes for the addon: one char a byte when it holds bytes; a String that
// holds characters and is only named binary ("é".b) goes as its UTF-8 bytes.
function binaryPayload(data) {
  return isUtf8(data) ? Buffer.from(plain(data), 'utf8') : plain(data);
}

// One upgraded connection, the JS side of an Up::Client: its methods are what client.rb and
// pubsub.js call, and Upgrades#onEvent calls the on* ones.
class Connection {
  constructor(upgrades, token, kind, client) {
    this.upgrades = upgrades;
    this.addon = upgrades.addon;
    this.token = token;
    this.kind = kind;
    this.client = client;
    this.subscriptions = null; // pubsub.js's
    this.opened = false;       // the engine's open event came
    this.early = null;         // [send, args] waiting for it
    this.drainWanted = false;  // pending was seen above 0 before it
    this.pingMs = -1;          // a timeout set before it
    this.closing = false;      // close asked for: nothing more is written
    this.closeCode = 0;
    this.closed = false;       // the engine's close event came
  }

  // client.write: true when queued, false once closing. On an event stream, a name or id that
  // would break the framing is the app's error (ArgumentError, as up_ruby raises it).
  write(data, eventName, eventId) {
    if (this.kind === 'websocket') {
      if (this.closing || this.closed) return false;
      const binary = isBinary(data);
      const payload = binary ? binaryPayload(data) : plain(data);
      if (this.opened) return this.addon.wsSend(this.token, payload, binary);
      return this.send(this.wsSend, payload, binary);
    }
    const [name, id] = eventFields(this.upgrades.Opal, eventName, eventId);
    if (this.closing || this.closed) return false;
    return this.send(this.sseSend, plain(data), isUtf8(data), name, id);
  }

  send(how, ...args) {
    if (this.opened) return how.apply(this, args);
    (this.early || (this.early = [])).push([how, args]);
    return true;
  }

  wsSend(payload, binary) {
    return this.addon.wsSend(this.token, payload, binary);
  }

  sseSend(data, utf8, name, id) {
    return this.addon.sseSend(this.token, data, utf8, name, id) === 0;
  }

  // Writes not yet handed to the kernel, -1 once closing; above 0, on_drained is owed.
  pending() {
    if (this.closing || this.closed) return -1;
    if (this.opened) return this.addon.upgradePending(this.token);
    const n = this.early === null ? 0 : this.early.length;
    if (n > 0) this.drainWanted = true;
    return n;
  }

  isOpen() {
    return !this.closing && !this.closed && (!this.opened || this.addon.upgradeOpen(this.token));
  }

  // Behind what was written: the engine sends the Close (or ends the stream) after it.
  close(code = CLOSE_NORMAL) {
    if (this.closing || this.closed) return;
    this.closing = true;
    this.closeCode = code;
    if (this.opened) this.addon.upgradeClose(this.token, code);
  }

  // Seconds between pings of an idle WebSocket (0: never); an event stream's heartbeat.
  timeout() {
    if (this.kind !== 'websocket') return this.upgrades.heartbeatSeconds;
    if (!this.opened) return (this.pingMs < 0 ? this.upgrades.pingMs : this.pingMs) / 1000;
    return this.addon.wsPing(this.token) / 1000;
  }

  // An event stream's heartbeat is --sse-heartbeat's only (as up_ruby).
  setTimeout(seconds) {
    if (this.kind !== 'websocket' || this.closed) return;
    const ms = Math.round(seconds * 1000);
    if (this.opened) this.addon.wsPing(this.token, ms);
    else this.pingMs = ms;
  }

  // ---- the engine's events

  onOpen() {
    this.opened = true;
    if (this.pingMs >= 0) this.addon.wsPing(this.token, this.pingMs);
    const early = this.early;
    this.early = null;
    if (early !== null) for (const [how, args] of early) how.apply(this, args);
    if (this.drainWanted) this.addon.upgradePending(this.token);
    if (this.closing) this.addon.upgradeClose(this.token, this.closeCode);
  }

  // A graceful stop: the app's goodbye, then the close behind it (1001 for a WebSocket).
  onShutdown() {
    if (this.closing || this.closed) return;
    this.client.$callback('on_shutdown');
    this.close(CLOSE_GOING_AWAY);
  }

  onClose() {
    this.closed = true;
    this.client.$finish();
  }
}

class Upgrades {
  // options: the checked settings (max_msg, ws_ping, ws_deflate, sse_heartbeat,
  // ws_max_pending), seconds as Up::Options has them.
  constructor(Opal, addon, options, log) {
    this.Opal = Opal;
    this.addon = addon;
    this.log = log;
    this.pingMs = Math.round(options.ws_ping * 1000);
    this.heartbeatSeconds = options.sse_heartbeat;
    this.conns = []; // slot index => Connection
    this.pubsub = new PubSub(Opal, addon);
    addon.upgrades({
      max_msg: options.max_msg,
      ws_ping_ms: this.pingMs,
      ws_deflate: options.ws_deflate ? 1 : 0,
      sse_heartbeat_ms: Math.round(options.sse_heartbeat * 1000),
      ws_max_pending: options.ws_max_pending,
    }, (kind, id, data, channel) => this.onEvent(kind, id, data, channel));
  }

  // Up::Node::Upgrader: the app took the upgrade of exchange with these response headers.
  // Sends the 101 or the stream's head through the engine and returns the connection. Throws
  // (a 500 for the app) on a field the engine refuses.
  accept(exchange, hash, client) {
    const token = this.addon.upgrade(exchange.token, flatten(hash));
    if (typeof token === 'string') throw new Error(`invalid response: ${token}`);
    exchange.status = exchange.upgrade === 'websocket' ? 101 : 200;
    exchange.over();
    const conn = new Connection(this, token, exchange.upgrade, client);
    this.conns[token & SLOT_MASK] = conn;
    return conn;
  }

  onEvent(kind, id, data, channel) {
    try {
      if (kind >= EV.PUBSUB_TEXT) {
        this.pubsub.deliver(id, channel, data, kind === EV.PUBSUB_BINARY);
        return;
      }
      const conn = this.conns[id];
      if (conn === undefined) return;
      switch (kind) {
        case EV.TEXT:
          if (!conn.closed) conn.client.$callback('on_message', data);
          break;
        case EV.BINARY:
          if (!conn.closed) conn.client.$callback('on_message', this.Opal.enc(data, 'binary'));
          break;
        case EV.OPEN:
          conn.onOpen();
          break;
        case EV.DRAINED:
          if (!conn.closing && !conn.closed) conn.client.$callback('on_drained');
          break;
        case EV.SHUTDOWN:
          conn.onShutdown();
          break;
        case EV.CLOSE:
          this.conns[id] = undefined;
          conn.onClose();
          break;
      }
    } catch (error) {
      // The Ruby side rescues what the app raises; this is a bug of ours, and the other
      // events must still go.
      this.log.line(`error in an upgraded connection's event: ${error && error.stack ? error.stack : error}`);
    }
  }
}

module.exports = { Upgrades };
