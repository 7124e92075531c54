'use strict';
// HTTP/2 beside HTTP/1.1 on one listener (RFC 9113): over TLS the client picks h2 by ALPN
// (offered first, http/1.1 kept); on a plain listener a client that knows we speak it (prior
// knowledge, RFC 9113 §3.3) opens with the connection preface, and every other connection
// is HTTP/1.1's. There is no Upgrade from HTTP/1.1 to h2c: RFC 9113 §3.1 deprecates it.
//
// server.js creates one per listener unless --no-http2. The listening server stays the
// http(s).Server, which keeps every HTTP/1.1 connection as before; the connections that speak
// h2 go to an http2.Server of ours that never listens, and its streams come back to
// server.js as Node's compat request and response (Http2ServerRequest, Http2ServerResponse).
//
// The limits (RFC 9113 §10.5): from our settings where one means the same thing,
// --max-head-size for the header list a stream may send, --max-headers for its field count,
// --keepalive-timeout for an idle connection, --body-timeout for a pause in a request body (server.js). Floods of
// SETTINGS, PINGs, resets (CVE-2023-44487) and CONTINUATION frames meet Node's and nghttp2's
// own guards (nghttp2 1.61 in Node 20), which end the flooder's connection with GOAWAY.

const http2 = require('node:http2');

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

// RFC 9113 §8.3.1: the pseudo-header fields a request may carry (:protocol is RFC 8441's).
const PSEUDO_FIELDS = 5;

// SETTINGS_MAX_CONCURRENT_STREAMS: the engine's (UP_HTTP2_MAX_CONCURRENT_STREAMS), so that the
// runtimes take as many streams at once from one connection. --max-pipeline is HTTP/1.1's and
// means another thing (responses held before writing): a client such as h2load opens 100
// streams before it reads the SETTINGS that would hold it to fewer.
const MAX_CONCURRENT_STREAMS = 100;

// nghttp2's errors for what a peer's frames broke (nghttp2.h's NGHTTP2_ERR_*, which Node
// does not export) and the RFC 9113 code each stands for, as nghttp2 itself maps them.
const { NGHTTP2_PROTOCOL_ERROR, NGHTTP2_FLOW_CONTROL_ERROR, NGHTTP2_STREAM_CLOSED, NGHTTP2_FRAME_SIZE_ERROR,
  NGHTTP2_COMPRESSION_ERROR } = http2.constants;
const PEER_ERRORS = new Map([
  [-505, NGHTTP2_PROTOCOL_ERROR], // NGHTTP2_ERR_PROTO
  [-510, NGHTTP2_STREAM_CLOSED], // NGHTTP2_ERR_STREAM_CLOSED
  [-518, NGHTTP2_PROTOCOL_ERROR], // NGHTTP2_ERR_INVALID_HEADER_BLOCK
  [-522, NGHTTP2_FRAME_SIZE_ERROR], // NGHTTP2_ERR_FRAME_SIZE_ERROR
  [-523, NGHTTP2_COMPRESSION_ERROR], // NGHTTP2_ERR_HEADER_COMP
  [-524, NGHTTP2_FLOW_CONTROL_ERROR], // NGHTTP2_ERR_FLOW_CONTROL
  [-531, NGHTTP2_PROTOCOL_ERROR], // NGHTTP2_ERR_HTTP_HEADER
  [-532, NGHTTP2_PROTOCOL_ERROR], // NGHTTP2_ERR_HTTP_MESSAGING
  [-536, NGHTTP2_PROTOCOL_ERROR], // NGHTTP2_ERR_SETTINGS_EXPECTED
  [-903, NGHTTP2_PROTOCOL_ERROR], // NGHTTP2_ERR_BAD_CLIENT_MAGIC
]);

// The http2.Server options for a listener's settings (Up::Options' names).
function sessionOptions(options) {
  return {
    // Node answers a stream with more fields than this with RST_STREAM (ENHANCE_YOUR_CALM):
    // one more than server.js refuses itself with a 431, as HTTP/1.1's are.
    maxHeaderListPairs: options.max_headers + 1 + PSEUDO_FIELDS,
    settings: {
      // Advertised (RFC 9113 §6.5.2). Node resets some streams past it itself; server.js
      // answers the rest with a 431 on their decoded size, as an HTTP/1.1 head over
      // --max-head-size.
      maxHeaderListSize: options.max_head_size,
      // A client opening more than this at once breaks the protocol (RFC 9113 §5.1.2): its
      // connection ends with GOAWAY.
      maxConcurrentStreams: MAX_CONCURRENT_STREAMS,
      // RFC 8441: WebSockets on streams (extended CONNECT).
      enableConnectProtocol: true,
    },
    // Past this many streams refused, or frames that break the protocol, the connection ends
    // with GOAWAY: Node's default for the first, a tenth of it for the second (a client
    // that sends a hundred invalid frames is broken or hostile).
    maxSessionRejectedStreams: 100,
    maxSessionInvalidFrames: 100,
  };
}

// Sockets given to the http2.Server become sessions; server.stop() ends them gracefully
// (GOAWAY, then the streams in flight finish) and server.terminate() cuts them.
class Http2Side {
  // listening: the http(s).Server; tlsBind: its TLSBind or null; onRequest(req, res) and
  // onContinue(req, res): server.js's, for each stream.
  constructor(options, listening, tlsBind, onRequest, onContinue) {
    this.headMs = options.head_timeout * 1000;
    this.sessions = new Set();
    this.sniffing = new Set();
    this.server = http2.createServer(sessionOptions(options));
    this.server.on('request', onRequest);
    // Node's compat layer sends CONNECT apart (else it answers 405): server.js's as well.
    this.server.on('connect', onRequest);
    this.server.on('checkContinue', onContinue);
    this.server.on('session', (session) => this.track(session));
    this.idleMs = options.keepalive_timeout * 1000;
    if (tlsBind) this.takeAlpn(listening);
    else this.takePreface(listening);
  }

  // A connection idle for --keepalive-timeout (no frame either way, and no stream open:
  // a quiet event stream is not idle) gets GOAWAY and closes, as HTTP/1.1's idle keep-alive
  // connection closes. Node's own timeout would cut it without GOAWAY.
  track(session) {
    this.sessions.add(session);
    session.on('close', () => this.sessions.delete(session));
    // A session that fails (a flood, a protocol error) is closed by Node; the error is the
    // peer's, not the server's.
    session.on('error', () => {});
    // Node destroys a session whose peer broke the protocol with the library's Error, before
    // nghttp2 has sent its own GOAWAY, and an Error means GOAWAY INTERNAL_ERROR: the peer
    // gets the code RFC 9113 names for what it did instead (§5.4.1).
    const destroy = session.destroy;
    session.destroy = function destroyWithPeerCode(error, code) {
      if (code === undefined && PEER_ERRORS.has(error?.errno)) code = PEER_ERRORS.get(error.errno);
      return destroy.call(this, error, code);
    };
    let open = 0;
    session.on('stream', (stream) => {
      open++;
      stream.once('close', () => {
        if (--open === 0 && !session.closed) session.setTimeout(this.idleMs);
      });
    });
    session.on('timeout', () => {
      if (open === 0) session.close();
    });
    session.setTimeout(this.idleMs);
    // Sniffed while stopping: the streams that came with the preface are served first.
    if (this.stopping) setImmediate(() => session.close());
  }

  // TLS: the connections whose client chose h2.
  takeAlpn(listening) {
    const http1 = listening.listeners('secureConnection');
    listening.removeAllListeners('secureConnection');
    listening.on('secureConnection', (socket) => {
      if (socket.alpnProtocol === 'h2') return this.server.emit('connection', socket);
      for (const listener of http1) listener.call(listening, socket);
    });
  }

  // Plain: reads the first bytes of each connection; those of the preface go on to
  // HTTP/2, anything else to HTTP/1.1 (the bytes read so far are put back first). A
  // connection that sends nothing within --head-timeout is closed, as HTTP/1.1's would be.
  takePreface(listening) {
    const http1 = listening.listeners('connection');
    listening.removeAllListeners('connection');
    listening.on('connection', (socket) => {
      let seen = Buffer.alloc(0);
      this.sniffing.add(socket);
      const done = () => {
        this.sniffing.delete(socket);
        socket.removeListener('data', onData);
        socket.removeListener('close', onClose);
        socket.removeListener('timeout', onTimeout);
        socket.setTimeout(0);
        socket.pause();
        socket.unshift(seen);
      };
      const onData = (chunk) => {
        seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
        const length = Math.min(seen.length, PREFACE.length);
        const h2 = seen.subarray(0, length).equals(PREFACE.subarray(0, length));
        if (h2 && length < PREFACE.length) return;
        done();
        if (h2) return this.server.emit('connection', socket);
        for (const listener of http1) listener.call(listening, socket);
        // Node's HTTP/1.1 parser reads the socket itself from now on; the bytes put back
        // reach it first, on this tick, before the next read.
        socket.resume();
      };
      const onClose = () => this.sniffing.delete(socket);
      const onTimeout = () => socket.destroy();
      socket.on('data', onData);
      socket.on('close', onClose);
      socket.on('timeout', onTimeout);
      socket.setTimeout(this.headMs);
    });
  }

  // A graceful stop: every session gets GOAWAY and closes once its streams are done. A
  // connection whose first bytes have not been read yet is left to them (a request may be
  // in them, as Node's HTTP/1.1 server leaves a connection that has not sent its head), and
  // to --head-timeout.
  stop() {
    this.stopping = true;
    for (const session of this.sessions) session.close();
  }

  terminate() {
    for (const session of this.sessions) session.destroy();
    for (const socket of this.sniffing) socket.destroy();
  }
}

module.exports = { Http2Side };
