'use strict';
// The upgraded connections of one up_node process (WebSockets, websocket.js; event streams,
// sse.js) and what they share: the ws server, pub/sub (pubsub.js), the timers of pings and
// heartbeats, and the stop. worker.js makes one per process and hands it to every
// http.Server (server.js); the Ruby side reaches it as `exchange.server.upgrades`
// (opal/up/node/upgrader.rb) and through Up::Node::PubSubServer.
//
// Timers: one ticker a second looks at every connection, as up_ruby's loop looks at its
// timers once a second: a second is the grain of --ws-ping and --sse-heartbeat here too, and
// an idle connection costs no timer of its own.

const http = require('node:http');
const { acceptWebSocket, createWebSocketServer } = require('./websocket');
const { acceptEventStream } = require('./sse');
const { PubSub } = require('./pubsub');

const TICK_MS = 1000;

class Upgrades {
  // options: the checked settings (max_msg, ws_ping, sse_heartbeat, ws_max_pending,
  // ws_deflate).
  constructor(Opal, options, log) {
    this.Opal = Opal;
    this.log = log;
    this.wss = createWebSocketServer(options);
    this.pingMs = options.ws_ping * 1000;
    this.heartbeatMs = options.sse_heartbeat * 1000;
    this.pubsub = new PubSub(Opal, log, options.ws_max_pending);
    this.open = new Set();
    this.ticker = null;
    this.stopping = false;
  }

  // Up::Node::Upgrader: the app took the upgrade. Returns the connection, or nil when the
  // client left before it was made.
  accept(exchange, hash, client) {
    const connection = exchange.upgrade === 'websocket'
      ? acceptWebSocket(this, exchange, hash, client)
      : acceptEventStream(this, exchange, hash, client);
    if (connection === null) return this.Opal.nil;
    this.open.add(connection);
    if (this.ticker === null) {
      this.ticker = setInterval(() => this.tick(), TICK_MS);
      this.ticker.unref();
    }
    // A stop that began while the app was answering: this one says goodbye at once.
    if (this.stopping) queueMicrotask(() => connection.shutdown());
    return connection;
  }

  remove(connection) {
    this.open.delete(connection);
    if (this.open.size === 0 && this.ticker !== null) {
      clearInterval(this.ticker);
      this.ticker = null;
    }
  }

  tick() {
    for (const connection of this.open) connection.tick(TICK_MS);
  }

  // A field of the app's that Node would refuse to send throws, as a response's would.
  validateField(name, value) {
    http.validateHeaderName(name);
    http.validateHeaderValue(name, value);
  }

  // A graceful stop (worker.js): each connection's on_shutdown, then its close (1001 for a
  // WebSocket) behind what the app wrote; on_close follows when the client has gone.
  stop() {
    this.stopping = true;
    for (const connection of Array.from(this.open)) connection.shutdown();
  }

  // Past --shutdown-timeout: every socket left is cut (on_close still runs).
  terminate() {
    for (const connection of Array.from(this.open)) connection.terminate();
  }
}

module.exports = { Upgrades };
