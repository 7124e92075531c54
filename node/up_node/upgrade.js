'use strict';
// What a request may become (docs/websockets.md, "Upgrade"), decided as up_ruby's
// engine decides it (ext/up/engine/http1/websocket_handshake.c, sse/sse.c), so that the app sees the
// same rack.upgrade? on either runtime. server.js asks for every request: a request Node
// routes to 'upgrade' (it has Connection: upgrade and an Upgrade field) is a WebSocket
// handshake, a bad one (400), or a plain request that named another protocol; any request
// whose Accept holds text/event-stream may become an event stream.

const WEBSOCKET = 'websocket';
const SSE = 'sse';

// A handshake that asked for a WebSocket but cannot have one: 400, and the reason as the
// body (RFC 6455 §4.2.1; §4.4: a version we do not speak is answered with the one we do).
class BadHandshake {
  constructor(reason, versionHeader = false) {
    this.reason = reason;
    this.versionHeader = versionHeader;
  }
}

// The elements of a comma-separated list field (RFC 9110 §5.6.1), trimmed, empty ones left out.
function listHas(value, token) {
  for (const element of value.split(',')) {
    if (element.trim().toLowerCase() === token) return true;
  }
  return false;
}

// A key is 16 bytes in base64 (RFC 6455 §4.1 item 7): 24 characters, two of padding.
const KEY = /^[A-Za-z0-9+/]{21}[AQgw]==$/;

// req: an IncomingMessage. Returns WEBSOCKET, null (not a WebSocket handshake: a plain
// request) or a BadHandshake. Repeated fields are counted from rawHeaders, where Node has
// not joined them.
function websocketHandshake(req) {
  let upgrade = false;
  let connection = false;
  let keys = 0;
  let key = '';
  let versions = 0;
  let version = '';
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i].toLowerCase();
    const value = raw[i + 1];
    if (name === 'upgrade') upgrade = upgrade || listHas(value, WEBSOCKET);
    else if (name === 'connection') connection = connection || listHas(value, 'upgrade');
    else if (name === 'sec-websocket-key') {
      keys++;
      key = value.trim();
    } else if (name === 'sec-websocket-version') {
      versions++;
      version = value.trim();
    }
  }
  if (!upgrade || !connection) return null;
  // RFC 9110 §7.8: Upgrade means nothing in HTTP/1.0.
  if (req.httpVersionMinor < 1) return null;
  if (req.method !== 'GET') return new BadHandshake('WebSocket upgrade needs GET');
  if (versions !== 1 || version !== '13') return new BadHandshake('Unsupported Sec-WebSocket-Version (13 is)', true);
  if (keys !== 1 || !KEY.test(key)) return new BadHandshake('Invalid Sec-WebSocket-Key');
  return WEBSOCKET;
}

// Whether a media range of Accept is text/event-stream, parameters aside (RFC 9110 §12.5.1).
function acceptsEventStream(req) {
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length !== 6 || raw[i].toLowerCase() !== 'accept') continue;
    for (const range of raw[i + 1].split(',')) {
      if (range.split(';')[0].trim().toLowerCase() === 'text/event-stream') return true;
    }
  }
  return false;
}

module.exports = { websocketHandshake, acceptsEventStream, BadHandshake, WEBSOCKET, SSE };
