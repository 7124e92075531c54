'use strict';
// One http.Server for one listening address, with up_ruby's limits set where Node lets us
// and checked by us where it does not. It reads each request's body (up to --max-body-size)
// and hands the request to the Ruby handler (opal/up/node/handler.rb) as an Exchange.
//
// Who decides the status of a bad request: Node's parser (llhttp) rejects malformed requests
// and oversized heads before we see them; the 'clientError' listener below only picks the
// status and body we answer with (431 for a head over --max-head-size, 408 for Node's
// header/request timeouts, 400 for the rest). What llhttp lets through, request_check.js
// refuses as up_ruby does where Node's parse shows it (version, target, Host, Transfer-
// Encoding). Too many header fields (431) and a body over the limit (413, before it is read
// when Content-Length says so) are ours.

const http = require('node:http');
const https = require('node:https');
const { exchangeFor, regularFields, headerListSize, checkStream, endStream } = require('./http2_exchange');
const { Http2Side } = require('./http2');
const { check } = require('./request_check');
const { reason } = require('./reason');
const { escapedThrow, describeThrown } = require('./thrown');
const { websocketHandshake, acceptsEventStream, BadHandshake, WEBSOCKET, SSE } = require('./upgrade');
const { StaticFiles } = require('./static_files');

function statusFor(error) {
  if (error.code === 'HPE_HEADER_OVERFLOW') return 431;
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') return 408;
  return 400;
}

// The same simple response up_ruby's engine sends (up_response_send_simple), then close.
function rejectHead(status) {
  const body = `${reason(status)}\n`;
  return `HTTP/1.1 ${status} ${reason(status)}\r\ncontent-type: text/plain; charset=utf-8\r\n` +
    `content-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`;
}

// Node closes after a `connection: close` response only once the request's body has ended,
// which a body read until the client closes never does: end the socket ourselves.
function reject(res, status) {
  const body = `${reason(status)}\n`;
  const socket = res.socket;
  socket.upRefused = true;
  res.writeHead(status, reason(status), ['content-type', 'text/plain; charset=utf-8', 'content-length', String(body.length), 'connection', 'close']);
  res.end(body, () => socket.end());
}

// A request Node handed over at 'upgrade' (it has Connection: upgrade and an Upgrade field)
// keeps its socket to itself: Node's parser has let go of it. It is answered through a
// ServerResponse of its own on that socket, which closes after it, unless it becomes a
// WebSocket (websocket.js takes the socket then).
function detachedResponse(req, socket) {
  const res = new http.ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket);
  res.on('finish', () => socket.end());
  return res;
}

// The same refusal on an HTTP/2 stream: the stream ends, not the connection; a body still
// coming is stopped.
function rejectStream(req, res, status) {
  const body = `${reason(status)}\n`;
  res.writeHead(status, ['content-type', 'text/plain; charset=utf-8', 'content-length', String(body.length)]);
  res.end(body, () => endStream(req, res));
}

// A body that grew past --max-body-size, on either protocol.
function refuseBody(req, res) {
  if (req.httpVersionMajor === 2) rejectStream(req, res, 413);
  else reject(res, 413);
}

// A WebSocket handshake we refuse (upgrade.js), as up_ruby's engine answers it.
function refuseHandshake(res, bad) {
  const body = `${bad.reason}\n`;
  const headers = bad.versionHeader ? ['sec-websocket-version', '13'] : [];
  headers.push('content-type', 'text/plain; charset=utf-8', 'content-length', String(Buffer.byteLength(body)));
  res.writeHead(400, reason(400), headers);
  res.end(body);
}

// options: the checked settings (snake_case, as Up::Options names them). handler: the Ruby
// Up::Node::Handler. listener: { host, port, secure } for SERVER_NAME when a request has no
// Host, and the scheme. upgrades: the process's Upgrades (upgrades.js), which WebSockets and
// event streams join. tlsBind: a TLSBind (tls.js) for HTTPS, else null. Unless
// options.http2 is false, the server speaks HTTP/2 too (http2.js, server.http2), and its
// streams take the same path as requests.
function createServer(options, handler, log, listener, upgrades, tlsBind) {
  const headMs = options.head_timeout * 1000;
  const settings = {
    maxHeaderSize: options.max_head_size,
    headersTimeout: headMs,
    // Node has no pause-between-chunks timer: the whole request gets head + body time.
    requestTimeout: headMs + options.body_timeout * 1000,
    keepAliveTimeout: options.keepalive_timeout * 1000,
    // How often Node looks for requests past those timeouts (30 s by default).
    connectionsCheckingInterval: Math.min(1000, headMs / 2),
    // Node's own refusal has no body; request_check.js refuses it as up_ruby does.
    requireHostHeader: false
  };
  const server = tlsBind ? https.createServer({ ...settings, ...tlsBind.serverOptions }) : http.createServer(settings);
  if (tlsBind) tlsBind.watch(server);
  // One more than allowed, so that "too many" is visible (Node drops the rest silently).
  server.maxHeadersCount = options.max_headers + 1;
  server.stopping = false;
  server.upgrades = upgrades;
  server.log = log; // for the line of an x-sendfile naming no file (sendfile.js)
  // --public, --static...: files answered before the app (static_files.js).
  const statics = options.static_files ? new StaticFiles(options.static_files, server) : null;

  const tooLarge = (req) => {
    const length = Number(req.headers['content-length']);
    return options.max_body_size > 0 && length > options.max_body_size;
  };

  const onRequest = (req, res) => {
    // Pipelined behind a request we refused: the connection is closing, nothing more is served.
    if (req.socket.upRefused) return;
    const refused = check(req);
    if (refused) return reject(res, refused);
    if (req.rawHeaders.length / 2 > options.max_headers) return reject(res, 431);
    if (tooLarge(req)) return reject(res, 413);
    if (statics !== null && statics.handle(req, res, () => toApp(req, res))) return;
    toApp(req, res);
  };

  const toApp = (req, res) => {
    // RFC 9112 §6.3: a request with neither Content-Length nor Transfer-Encoding has no
    // body. Served at once, as Node hands it over: waiting for its 'end' cost two listeners
    // and a tick per request. read(0) marks it as read by us, so that Node does not dump
    // it once the response is done: with nothing to dump, that was eight ticks (resume,
    // flowing, end, auto-destroy, close), each of which pays for pushing and popping
    // Node's async context, which Opal's bridged Array sends to V8's slow path. Node's own
    // parser still tracks the request and the connection's timeouts.
    // An HTTP/2 request has none when its HEADERS frame ended the stream (RFC 9113 §8.1);
    // one may come without content-length.
    const headers = req.headers;
    const bodiless = req.httpVersionMajor === 2 ? req.stream.endAfterHeaders
      : headers['transfer-encoding'] === undefined && headers['content-length'] === undefined;
    if (bodiless) {
      req.read(0);
      return serve(req, res, '', acceptsEventStream(req) ? SSE : null);
    }
    const chunks = [];
    let size = 0;
    // HTTP/2: --body-timeout is the longest pause in a stream's body, then a 408 on it.
    if (req.httpVersionMajor === 2) {
      res.stream.setTimeout(options.body_timeout * 1000, () => {
        if (!res.headersSent) rejectStream(req, res, 408);
      });
    }
    req.on('data', (chunk) => {
      size += chunk.length;
      if (options.max_body_size > 0 && size > options.max_body_size) {
        if (!res.headersSent) refuseBody(req, res);
        req.removeAllListeners('data');
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (req.httpVersionMajor === 2) res.stream.setTimeout(0);
      if (res.headersSent) return;
      serve(req, res, size === 0 ? '' : Buffer.concat(chunks).toString('latin1'), acceptsEventStream(req) ? SSE : null);
    });
  };

  // upgrade: what the request may become (upgrade.js); head: what followed a WebSocket's head.
  const serve = (req, res, body, upgrade, head = null) => {
    const exchange = exchangeFor(req, res, body, listener, server);
    exchange.upgrade = upgrade;
    exchange.upgradeHead = head;
    try {
      handler.$serve(exchange);
    } catch (error) {
      // The handler rescues what the app raises, so this is a bug of ours, or Opal's
      // uncaught `return`. Keep serving.
      const where = escapedThrow(error) ? `${req.method} ${req.url}` : "up_node's handler";
      log.line(`error in ${where}: ${describeThrown(error)}`);
      exchange.fail();
    }
  };

  // A request with Connection: upgrade and an Upgrade field: a WebSocket handshake (a good
  // one is served with rack.upgrade? :websocket, a bad one refused with a 400), or a plain
  // request that names another protocol, served on its socket without keep-alive.
  const onUpgrade = (req, socket, head) => {
    const res = detachedResponse(req, socket);
    const refused = check(req) || (req.rawHeaders.length / 2 > options.max_headers ? 431 : 0) || (tooLarge(req) ? 413 : 0);
    if (refused) return reject(res, refused);
    const handshake = websocketHandshake(req);
    if (handshake instanceof BadHandshake) return refuseHandshake(res, handshake);
    if (handshake === WEBSOCKET) return serve(req, res, '', WEBSOCKET, head);
    readDetachedBody(req, res, head, (body) => serve(req, res, body, acceptsEventStream(req) ? SSE : null));
  };

  // The body of a plain request Node handed over at 'upgrade' (Node reads none then): its
  // Content-Length bytes, from what came with the head and then from the socket. A chunked
  // one is not decoded here: refused with a 400.
  const readDetachedBody = (req, res, head, done) => {
    if (req.headers['transfer-encoding'] !== undefined) return reject(res, 400);
    const length = Number(req.headers['content-length'] || 0);
    if (length === 0) return done('');
    const socket = res.socket;
    const chunks = [head];
    let size = head.length;
    const more = (chunk) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size < length) return;
      socket.removeListener('data', more);
      socket.pause();
      done(Buffer.concat(chunks).subarray(0, length).toString('latin1'));
    };
    if (size >= length) return done(head.subarray(0, length).toString('latin1'));
    socket.on('data', more);
    socket.resume();
  };

  // An HTTP/2 stream: refused as an HTTP/1.1 request would be, on its stream.
  const onStream = (req, res) => {
    const fields = regularFields(req);
    req.upFields = fields;
    const tooMany = fields.length / 2 > options.max_headers || headerListSize(req.rawHeaders) > options.max_head_size;
    const refused = checkStream(req, fields) || (tooMany ? 431 : 0) || (tooLarge(req) ? 413 : 0);
    if (refused) return rejectStream(req, res, refused);
    if (req.method === 'CONNECT') return onConnect(req, res);
    if (statics !== null && statics.handle(req, res, () => toApp(req, res))) return;
    toApp(req, res);
  };

  // RFC 8441 §4: a CONNECT whose :protocol is websocket opens a WebSocket on its stream,
  // served as HTTP/1.1's handshake is (rack.upgrade? :websocket); §5: it carries
  // Sec-WebSocket-Version but no key. We are no proxy: any other CONNECT is not ours (501).
  const onConnect = (req, res) => {
    if (req.headers[':protocol'] !== 'websocket') return rejectStream(req, res, 501);
    if (req.headers['sec-websocket-version'] !== '13') {
      const body = 'Unsupported Sec-WebSocket-Version (13 is)\n';
      res.writeHead(400, ['sec-websocket-version', '13', 'content-type', 'text/plain; charset=utf-8', 'content-length', String(body.length)]);
      return res.end(body);
    }
    serve(req, res, '', WEBSOCKET);
  };

  const onStreamContinue = (req, res) => {
    if (tooLarge(req)) return rejectStream(req, res, 413);
    res.writeContinue();
    onStream(req, res);
  };

  server.http2 = options.http2 ? new Http2Side(options, server, tlsBind, onStream, onStreamContinue) : null;
  server.on('request', onRequest);
  server.on('upgrade', onUpgrade);
  // Expect: 100-continue (RFC 9110 §10.1.1): refuse a body that is too large before it is sent.
  server.on('checkContinue', (req, res) => {
    if (req.socket.upRefused) return;
    const refused = check(req) || (tooLarge(req) ? 413 : 0);
    if (refused) return reject(res, refused);
    res.writeContinue();
    onRequest(req, res);
  });
  server.on('clientError', (error, socket) => {
    if (error.code === 'ECONNRESET' || !socket.writable) return socket.destroy();
    // The parser can fail on what follows a request we refused already: one answer is enough.
    if (socket.upRefused) return socket.end();
    socket.end(rejectHead(statusFor(error)));
  });
  return server;
}

module.exports = { createServer };
