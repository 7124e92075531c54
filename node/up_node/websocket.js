'use strict';
// WebSockets on up_node (docs/websockets.md): the handshake and the framing are the
// npm ws package's (RFC 6455: masking, control frames, fragmentation, UTF-8, close codes 1002,
// 1007 and 1009, permessage-deflate), driven the way up_ruby's engine drives its own:
// server.js hands over a request that asks for a WebSocket, the app's Up::Client
// (opal/up/node/client.rb) accepts it (#accept below) and gets a WebSocketConnection, whose
// events become the handler's callbacks.
//
// One JS thread runs every callback, so a connection's callbacks never run at once: on_open
// runs before the first message is read, messages arrive in order (ws keeps their order
// while it inflates), nothing more is read after our Close (as up_ruby), and on_close comes
// last, once ws has closed the socket. Upgrades (upgrades.js) owns the open connections.

const { WebSocket, WebSocketServer } = require('ws');
const { flatten, plain, bytes } = require('./exchange');

// What ws.send is told; made once, as a send per message must not allocate them.
const TEXT = Object.freeze({ binary: false });
const BINARY = Object.freeze({ binary: true });

// RFC 6455 §7.4.1.
const CLOSE_NORMAL = 1000;
const CLOSE_GOING_AWAY = 1001;
const CLOSE_POLICY = 1008;

// ws reads maxPayload as a 32-bit integer (`| 0`): a larger --max-msg would turn it into no
// limit at all, or a negative one.
const MAX_PAYLOAD = 0x7fffffff;

// The app's fields that the 101's own replace (up_ruby's ws_owned in ext/up/ruby/client.c).
const OWNED = new Set(['content-type', 'content-length', 'transfer-encoding', 'connection', 'upgrade',
  'sec-websocket-accept', 'sec-websocket-extensions', 'sec-websocket-protocol']);

// Where the app's subprotocol and fields wait between the app's answer and ws's 'headers'.
const kProtocol = Symbol('up.protocol');
const kFields = Symbol('up.fields');

// Whether an Opal String goes as a binary frame: a binary (ASCII-8BIT) String does, every
// other one is text. Its bytes are exchange.js's: one per char when its internal encoding is
// binary (bytes read from a Buffer), else UTF-8 (String#b only changes the name: as on MRI,
// "é".b is C3 A9).
function isBinary(data) {
  const encoding = data.encoding;
  return encoding !== undefined && encoding !== null && encoding.name === 'ASCII-8BIT';
}

// An Opal String of a message's bytes: text as it is (ws checked its UTF-8), binary one char
// a byte, marked binary as rack.input's reads are (RackCompat::Bytes.from_buffer).
function messageString(Opal, data, binary) {
  return binary ? Opal.enc(data.toString('latin1'), 'binary') : data.toString();
}

// One accepted WebSocket, the JS side of an Up::Client. Its methods are what client.rb calls;
// ws and the ticker (upgrades.js) call the on* ones.
class WebSocketConnection {
  constructor(upgrades, ws, socket, client) {
    this.upgrades = upgrades;
    this.ws = ws;
    this.socket = socket;
    this.client = client;
    this.kind = 'websocket';
    this.remoteAddress = socket.remoteAddress || '';
    // Writes of the app's not yet handed to the kernel, and whether the app saw some (then
    // on_drained is owed when they are gone).
    this.writes = 0;
    this.drainWanted = false;
    // client.close, a stop or a slow subscriber: nothing more is read or written.
    this.closing = false;
    this.closed = false;
    this.pingMs = upgrades.pingMs;
    this.idleMs = 0;
    this.lastRead = socket.bytesRead;
    this.pingOutstanding = false;
    // The pub/sub subscriptions it holds (pubsub.js), ended with it.
    this.subscriptions = null;
    this.onWritten = () => this.written();
    ws.on('message', (data, binary) => this.onMessage(data, binary));
    ws.on('close', () => this.onClose());
    // Protocol errors: ws has already sent the Close with its code (1002, 1007, 1009).
    ws.on('error', () => {});
  }

  // client.write: true when queued, false once closing.
  write(data) {
    if (this.closing || this.closed) return false;
    this.writes++;
    if (isBinary(data)) this.ws.send(bytes(data), BINARY, this.onWritten);
    else this.ws.send(plain(data), TEXT, this.onWritten);
    return true;
  }

  written() {
    this.writes--;
    if (this.writes > 0 || !this.drainWanted || this.closing || this.closed) return;
    this.drainWanted = false;
    this.client.$callback('on_drained');
  }

  // Writes waiting, -1 once closing; a count above 0 makes on_drained owed.
  pending() {
    if (this.closing || this.closed) return -1;
    if (this.writes > 0) this.drainWanted = true;
    return this.writes;
  }

  isOpen() {
    return !this.closing && !this.closed;
  }

  // Behind what was written: ws sends the Close after the frames queued before it.
  close(code = CLOSE_NORMAL, reason = '') {
    if (this.closing || this.closed) return;
    this.closing = true;
    this.ws.close(code, reason);
  }

  // Seconds between pings of an idle connection (0: never).
  timeout() {
    return this.pingMs / 1000;
  }

  setTimeout(seconds) {
    this.pingMs = Math.round(seconds * 1000);
    this.idleMs = 0;
  }

  // A graceful stop: the app's goodbye, then 1001 behind it.
  shutdown() {
    if (this.closing || this.closed) return;
    this.client.$callback('on_shutdown');
    this.close(CLOSE_GOING_AWAY);
  }

  // Past --shutdown-timeout: the socket goes, on_close follows.
  terminate() {
    this.ws.terminate();
  }

  // ---- pub/sub (pubsub.js): a message written straight to this client, not counted in
  // pending (the app never wrote it).

  // The bytes this connection has not yet handed to the kernel.
  backlog() {
    return this.ws.bufferedAmount;
  }

  deliver(bytes, binary) {
    if (this.closing || this.closed) return;
    this.ws.send(bytes, binary ? BINARY : TEXT);
  }

  // Too far behind a stream it does not read: closed behind what it has (RFC 6455 §7.4.1:
  // 1008, a policy violation).
  closeSlow() {
    this.close(CLOSE_POLICY, 'subscriber too slow');
  }

  // ---- events

  onMessage(data, binary) {
    if (this.closing || this.closed) return; // nothing after our Close is for the app
    this.client.$callback('on_message', messageString(this.upgrades.Opal, data, binary));
  }

  onClose() {
    if (this.closed) return;
    this.closed = true;
    this.upgrades.remove(this);
    this.client.$finish();
  }

  // The ticker, once a second: an idle connection is pinged after pingMs, and closed with
  // 1001 when it stays silent as long again (as up_ruby's ws_on_timeout). Any byte read
  // counts as an answer.
  tick(ms) {
    const read = this.socket.bytesRead;
    if (read !== this.lastRead) {
      this.lastRead = read;
      this.idleMs = 0;
      this.pingOutstanding = false;
      return;
    }
    if (this.pingMs <= 0 || this.closing || this.closed) return;
    this.idleMs += ms;
    if (this.idleMs < this.pingMs) return;
    this.idleMs = 0;
    if (this.pingOutstanding) {
      this.close(CLOSE_GOING_AWAY, 'no answer to a ping');
    } else {
      this.pingOutstanding = true;
      this.ws.ping();
    }
  }
}

// The ws server of one process, made by upgrades.js with the checked options: ws only frames
// and negotiates, we decide the handshake (upgrade.js) and send the app's fields. A
// Sec-WebSocket-Protocol or -Extensions field ws cannot parse is its to refuse (a 400).
function createWebSocketServer(options) {
  const wss = new WebSocketServer({
    noServer: true,
    clientTracking: false, // upgrades.js keeps the open connections
    maxPayload: Math.min(options.max_msg, MAX_PAYLOAD),
    // As up_ruby's --ws-deflate: each message compressed with an empty window both ways, so
    // no connection keeps a window between messages (RFC 7692 §7.1.1), and short ones plain.
    perMessageDeflate: options.ws_deflate
      ? { serverNoContextTakeover: true, clientNoContextTakeover: true, threshold: 32 }
      : false,
    // Only the subprotocol the app chose, and only if the client offered it; ws would take the
    // client's first one when the app chose none.
    handleProtocols: (offered, req) => {
      const chosen = req[kProtocol];
      return chosen !== undefined && offered.has(chosen) ? chosen : false;
    }
  });
  // ws's head with lowercase names, as up_ruby writes them, and the app's fields after it.
  wss.on('headers', (lines, req) => {
    for (let i = 1; i < lines.length; i++) {
      const colon = lines[i].indexOf(':');
      lines[i] = lines[i].slice(0, colon).toLowerCase() + lines[i].slice(colon);
    }
    const fields = req[kFields];
    for (let i = 0; i < fields.length; i += 2) lines.push(`${fields[i]}: ${fields[i + 1]}`);
  });
  return wss;
}

// The app's response fields for its WebSocket: [the fields it may send, the subprotocol it
// chose if the client offered it (RFC 6455 §4.2.2: the client fails the connection
// otherwise), else undefined]. Throws (a 500 for the app) on a field Node would not send.
function answerFields(upgrades, req, hash) {
  const fields = [];
  let protocol;
  const all = flatten(hash);
  for (let i = 0; i < all.length; i += 2) {
    const name = all[i].toLowerCase();
    const value = all[i + 1];
    upgrades.validateField(name, value);
    if (name === 'sec-websocket-protocol') protocol = value;
    if (!OWNED.has(name)) fields.push(name, value);
  }
  if (protocol === undefined) return [fields, undefined];
  const offered = (req.headers['sec-websocket-protocol'] || '').split(',').map((p) => p.trim());
  if (offered.includes(protocol)) return [fields, protocol];
  upgrades.log.line('the app chose a WebSocket subprotocol the client did not offer; it is left out of ' +
    'its answer (RFC 6455 §4.2.2)');
  return [fields, undefined];
}

// The app accepted the WebSocket of exchange (an Exchange on a socket Node handed over at
// 'upgrade', or an HTTP/2 stream); hash: its response headers. Sends the 101 with the app's
// fields (a 200 on a stream) and returns the WebSocketConnection, or null when the socket is
// gone. Throws (a 500 for the app) on a field Node would not send.
function acceptWebSocket(upgrades, exchange, hash, client) {
  if (exchange.req.httpVersionMajor === 2) return acceptOnStream(upgrades, exchange, hash, client);
  const { req, res } = exchange;
  const socket = res.socket;
  const [fields, protocol] = answerFields(upgrades, req, hash);
  if (protocol !== undefined) req[kProtocol] = protocol;
  req[kFields] = fields;
  // ws checks Upgrade anew, and wants "websocket" alone where RFC 6455 §4.2.1 item 3 lets it
  // be one token of a list (upgrade.js has found it there).
  req.headers.upgrade = 'websocket';
  res.detachSocket(socket);
  let connection = null;
  upgrades.wss.handleUpgrade(req, socket, exchange.upgradeHead, (ws) => {
    connection = new WebSocketConnection(upgrades, ws, socket, client);
    // ws ends the socket once the Close handshake is over (or after failing the
    // connection), then waits for the client to end its side too: RFC 6455 §7.1.1 has the
    // server close the TCP connection first, and up_ruby's on_close does not wait for the
    // client either. (On a stream, its END_STREAM is that close: the client ends its own.)
    socket.on('finish', () => socket.destroy());
  });
  return connection;
}

// RFC 8441: a WebSocket on an HTTP/2 stream that an extended CONNECT opened (server.js). The
// answer is a 200 on the stream (no 101 and no Sec-WebSocket-Accept: §5) with the app's
// fields and subprotocol; then ws frames the stream as it frames a socket (a Duplex is
// enough for it). No permessage-deflate here: ws negotiates it only in its own HTTP/1.1
// handshake, and a server may always decline it (RFC 7692 §5).
function acceptOnStream(upgrades, exchange, hash, client) {
  const stream = exchange.res.stream;
  if (stream.destroyed) return null;
  const [fields, protocol] = answerFields(upgrades, exchange.req, hash);
  if (protocol !== undefined) fields.push('sec-websocket-protocol', protocol);
  exchange.sendOpenHead(200, fields);
  // What WebSocketConnection reads of a socket: the bytes read (its ping timer) and the
  // client's address.
  stream.bytesRead = 0;
  stream.on('data', (chunk) => { stream.bytesRead += chunk.length; });
  stream.remoteAddress = exchange.req.socket.remoteAddress;
  // As ws's server makes its own (its options carry the close timeout, automatic pongs and
  // the limits), but with no extension.
  const ws = new WebSocket(null, undefined, upgrades.wss.options);
  ws.setSocket(stream, Buffer.alloc(0), upgrades.wss.options);
  return new WebSocketConnection(upgrades, ws, stream, client);
}

module.exports = { acceptWebSocket, createWebSocketServer, isBinary };
