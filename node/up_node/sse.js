'use strict';
// Server-Sent Events on up_node (docs/websockets.md; the format is the HTML
// standard's "Server-sent events" section): a request whose Accept holds text/event-stream
// and whose app accepted it (Up::Client, opal/up/node/client.rb) gets a 200 head with the
// app's fields and no framing, then one event per write, up to the close. As up_ruby's
// (ext/up/engine/sse/sse.c): `id:` and `event:` first, a `data:` line for each line of the data
// (a line ends at CR, LF or CRLF, as the client splits them), a blank line; a comment line
// every --sse-heartbeat seconds of silence keeps proxies from closing it.

const { flatten, plain } = require('./exchange');

// A field longer than this, or one holding a line break or NUL, would break the stream (the
// engine's limit too: ext/up/engine/sse/sse.h, UP_SSE_MAX_FIELD).
const MAX_FIELD = 1024;
const BAD_FIELD = /[\r\n\0]/;
const LINE_BREAK = /\r\n|\r|\n/;
const HEARTBEAT = ':\n\n';

// The app's fields that the stream's own head replaces (up_ruby's sse_owned).
const OWNED = new Set(['content-type', 'content-length', 'transfer-encoding', 'connection', 'cache-control']);

function fieldOk(value) {
  return value.length <= MAX_FIELD && !BAD_FIELD.test(value);
}

// client.write's event: and id: as [name, id], JS strings or null when not given. A name or
// id that would break the framing is the app's error (ArgumentError, as up_ruby raises it).
// `up` checks them with this too (node/up/websocket.js), before the engine frames the event.
function eventFields(Opal, name, id) {
  name = name === Opal.nil || name == null ? null : plain(name);
  id = id === Opal.nil || id == null ? null : plain(id);
  if ((name !== null && !fieldOk(name)) || (id !== null && !fieldOk(id))) {
    throw Opal.ArgumentError.$new("an event's name and id may not hold a line break or NUL");
  }
  return [name, id];
}

// One event as text, from data as a JS string (one char a byte when latin1).
function event(data, name, id) {
  let out = '';
  if (id !== null) out += `id: ${id}\n`;
  if (name !== null) out += `event: ${name}\n`;
  const lines = data.split(LINE_BREAK);
  for (let i = 0; i < lines.length; i++) out += `data: ${lines[i]}\n`;
  return `${out}\n`;
}

// An Opal String as the JS string whose chars are what goes out, and how to write it.
function textOf(data) {
  const internal = data.internal_encoding;
  const latin1 = internal != null && (internal.name === 'ASCII-8BIT' || internal.name === 'ISO-8859-1');
  return [plain(data), latin1 ? 'latin1' : 'utf8'];
}

// One accepted event stream, the JS side of an Up::Client (see websocket.js's
// WebSocketConnection, whose methods it shares).
class EventStream {
  constructor(upgrades, exchange, client) {
    this.upgrades = upgrades;
    this.res = exchange.res;
    // The connection, or in HTTP/2 the stream: what ends the event stream at once.
    this.channel = exchange.channel;
    this.client = client;
    this.kind = 'sse';
    this.remoteAddress = exchange.req.socket.remoteAddress || '';
    this.writes = 0;
    this.drainWanted = false;
    this.closing = false;
    this.closed = false;
    this.heartbeatMs = upgrades.heartbeatMs;
    this.idleMs = 0;
    this.written = 0; // events and heartbeats sent since the last tick
    this.subscriptions = null;
    this.onWritten = () => this.afterWrite();
    // The client has nothing to say (what it sends is Node's to parse and drop); its leaving
    // closes the stream.
    this.res.on('close', () => this.onClose());
  }

  // client.write(data, event:, id:): true when queued, false once closing.
  write(data, eventName, eventId) {
    const [name, id] = eventFields(this.upgrades.Opal, eventName, eventId);
    if (this.closing || this.closed) return false;
    const [text, encoding] = textOf(data);
    this.writes++;
    this.written++;
    this.res.write(event(text, name, id), encoding, this.onWritten);
    return true;
  }

  afterWrite() {
    this.writes--;
    if (this.writes > 0 || !this.drainWanted || this.closing || this.closed) return;
    this.drainWanted = false;
    this.client.$callback('on_drained');
  }

  pending() {
    if (this.closing || this.closed) return -1;
    if (this.writes > 0) this.drainWanted = true;
    return this.writes;
  }

  isOpen() {
    return !this.closing && !this.closed;
  }

  // Ends the stream behind what was written; Node closes the connection after it (the head
  // said so).
  close() {
    if (this.closing || this.closed) return;
    this.closing = true;
    this.res.end();
  }

  // An event stream's timeout is its heartbeat, set by --sse-heartbeat only (as up_ruby).
  timeout() {
    return this.heartbeatMs / 1000;
  }

  setTimeout() {}

  shutdown() {
    if (this.closing || this.closed) return;
    this.client.$callback('on_shutdown');
    this.close();
  }

  terminate() {
    this.channel.destroy();
  }

  // ---- pub/sub (pubsub.js)

  backlog() {
    return this.channel.writableLength;
  }

  // message: a pubsub.js Message; its event is made once for every stream.
  deliver(message) {
    if (this.closing || this.closed) return;
    this.written++;
    this.res.write(message.sseEvent(event), 'latin1');
  }

  closeSlow() {
    this.close();
  }

  // ---- events

  onClose() {
    if (this.closed) return;
    this.closed = true;
    this.upgrades.remove(this);
    this.client.$finish();
  }

  // The ticker, once a second: a comment after heartbeatMs without an event.
  tick(ms) {
    if (this.written > 0) {
      this.written = 0;
      this.idleMs = 0;
      return;
    }
    if (this.heartbeatMs <= 0 || this.closing || this.closed) return;
    this.idleMs += ms;
    if (this.idleMs < this.heartbeatMs) return;
    this.idleMs = 0;
    this.res.write(HEARTBEAT);
  }
}

// The app accepted the event stream of exchange; hash: its response headers. Sends the head
// (200, text/event-stream, no-cache, the app's other fields, no length and no chunking: the
// stream ends with the connection) and returns the EventStream. Throws (a 500 for the app) on
// a field Node would not send.
function acceptEventStream(upgrades, exchange, hash, client) {
  const res = exchange.res;
  const headers = ['content-type', 'text/event-stream', 'cache-control', 'no-cache'];
  const all = flatten(hash);
  for (let i = 0; i < all.length; i += 2) {
    const name = all[i].toLowerCase();
    upgrades.validateField(name, all[i + 1]);
    if (!OWNED.has(name)) headers.push(name, all[i + 1]);
  }
  res.useChunkedEncodingByDefault = false;
  res.shouldKeepAlive = false;
  exchange.sendHead(200, headers);
  res.flushHeaders();
  return new EventStream(upgrades, exchange, client);
}

module.exports = { acceptEventStream, event, eventFields };
