'use strict';
// One HTTP/2 stream as the Ruby side sees it: an Exchange (exchange.js) over Node's compat
// request and response (Http2ServerRequest, Http2ServerResponse), which differ from
// HTTP/1.1's where the protocol does: the request's pseudo-header fields are no fields of
// the env, :authority stands for Host, the head has no reason phrase and no connection-
// specific field, an early hint is a 103 HEADERS frame on the stream, and a response cut
// off resets the stream alone. server.js creates one per stream (exchangeFor), as it does
// an Exchange per HTTP/1.1 request.

const http = require('node:http');
const http2 = require('node:http2');
const { Exchange } = require('./exchange');

const { NGHTTP2_INTERNAL_ERROR, NGHTTP2_NO_ERROR } = http2.constants;

// RFC 9113 §8.2.2: fields that only mean something to an HTTP/1.1 connection. Node refuses
// to send them; the app that sets one (Rack::Lint allows it) gets its response without it.
const CONNECTION_FIELDS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

// RFC 3986 §3.2.2, as request_check.js's HOST: a host and an optional port.
const AUTHORITY = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]*)(?::[0-9]*)?$/;

// The request's fields without its pseudo-header fields, as [name, value...].
function regularFields(req) {
  const raw = req.rawHeaders;
  const fields = [];
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].charCodeAt(0) !== 58) fields.push(raw[i], raw[i + 1]); // ':'
  }
  return fields;
}

// What request_check.js refuses in HTTP/1.1 that nghttp2 lets through (it checks the
// pseudo-header fields and refuses connection-specific ones itself): the status to refuse
// req with, or 0. fields: regularFields(req).
function checkStream(req, fields) {
  if (req.url.includes('#')) return 400;
  const authority = req.authority;
  if (authority !== undefined && !AUTHORITY.test(authority)) return 400;
  let host = null;
  for (let i = 0; i < fields.length; i += 2) {
    if (fields[i] !== 'host') continue;
    if (host !== null) return 400;
    host = fields[i + 1];
  }
  // RFC 9113 §8.3.1: a Host that names another authority than :authority is malformed.
  if (host !== null && (!AUTHORITY.test(host) || (authority !== undefined && host.toLowerCase() !== authority.toLowerCase()))) return 400;
  return 0;
}

// RFC 9113 §6.5.2: a header list's size, each field's name and value and 32 octets more,
// pseudo-header fields too. raw: [name, value...].
function headerListSize(raw) {
  let size = 0;
  for (let i = 0; i < raw.length; i++) size += raw[i].length;
  return size + (raw.length / 2) * 32;
}

// A flat [name, value...] list without connection-specific fields. Each value is checked as
// HTTP/1.1's writeHead checks it: Node's HTTP/2 response would send a CR or LF (RFC 9113
// §8.2.1 makes such a field malformed) where HTTP/1.1's refuses the head, which the app's
// response then becomes a 500 for.
function withoutConnectionFields(headers) {
  for (let i = 0; i < headers.length; i += 2) http.validateHeaderValue(headers[i], headers[i + 1]);
  let i = 0;
  while (i < headers.length && !CONNECTION_FIELDS.has(headers[i].toLowerCase())) i += 2;
  if (i >= headers.length) return headers;
  const kept = headers.slice(0, i);
  for (; i < headers.length; i += 2) {
    if (!CONNECTION_FIELDS.has(headers[i].toLowerCase())) kept.push(headers[i], headers[i + 1]);
  }
  return kept;
}

class Http2Exchange extends Exchange {
  constructor(req, res, body, listener, server) {
    super(req, res, body, listener, server);
    this.fields = req.upFields || regularFields(req);
    this.authority = req.authority === undefined ? null : req.authority;
    this.framedBody = true;
    // A WebSocket's extended CONNECT (RFC 8441) is the GET of HTTP/1.1's handshake to the
    // app, so that one app serves both.
    if (req.method === 'CONNECT') this.method = 'GET';
  }

  get channel() {
    return this.res.stream;
  }

  // Closing after a stop is the connection's GOAWAY (http2.js), not a field of the head.
  writeHead(status, headers) {
    this.sendHead(status, headers);
  }

  sendHead(status, headers) {
    this.res.writeHead(status, withoutConnectionFields(headers));
  }

  // The head of a stream that stays open both ways (a WebSocket's): a HEADERS frame as it
  // is. Node's compat head waits to send trailers at the end, and those went out ahead of
  // the last DATA the stream had queued (a WebSocket's Close frame).
  sendOpenHead(status, headers) {
    const fields = { ':status': status };
    const kept = withoutConnectionFields(headers);
    for (let i = 0; i < kept.length; i += 2) {
      const name = kept[i].toLowerCase();
      const old = fields[name];
      fields[name] = old === undefined ? kept[i + 1] : [].concat(old, kept[i + 1]);
    }
    this.res.stream.respond(fields, { endStream: false });
  }

  endWith(body, encoding) {
    this.res.end(body, encoding);
  }

  // As Exchange's: a 103 with the Hash's fields, an Array value as one field per item; here
  // a HEADERS frame on the stream (RFC 9113 §8.1), sent before the response's.
  earlyHintsProc() {
    const Opal = globalThis.Opal;
    return Opal.Up.EarlyHints.$new((headers) => {
      const res = this.res;
      if (res.headersSent || res.writableEnded || res.stream.destroyed) return Opal.nil;
      const hints = { ':status': 103 };
      try {
        for (const [name, value] of headers) {
          const key = String(name.$to_s()).toLowerCase();
          http.validateHeaderName(key);
          const lines = [];
          for (const one of Opal.top.$Array(value)) {
            const line = String(one.$to_s());
            http.validateHeaderValue(key, line);
            lines.push(line);
          }
          if (CONNECTION_FIELDS.has(key)) continue;
          hints[key] = hints[key] === undefined ? lines : hints[key].concat(lines);
        }
      } catch (error) {
        throw Opal.ArgumentError.$new(`rack.early_hints: ${error.message}`);
      }
      res.stream.additionalHeaders(hints);
      return Opal.nil;
    });
  }

  // A response cut off resets its stream (the client cannot take a partial body for a
  // whole one); the connection's other streams go on.
  fail() {
    if (this.res.headersSent) {
      this.res.stream.close(NGHTTP2_INTERNAL_ERROR);
      return;
    }
    super.fail();
  }
}

// The Exchange for a request of either protocol.
function exchangeFor(req, res, body, listener, server) {
  return req.httpVersionMajor === 2 ? new Http2Exchange(req, res, body, listener, server) : new Exchange(req, res, body, listener, server);
}

// Ends a stream whose response is complete while the client may still be sending its body
// (a refused one): RST_STREAM with NO_ERROR tells it to stop (RFC 9113 §8.1).
function endStream(req, res) {
  const stream = res.stream;
  if (!stream.destroyed && !stream.endAfterHeaders && !req.complete) stream.close(NGHTTP2_NO_ERROR);
}

module.exports = { Http2Exchange, exchangeFor, regularFields, headerListSize, checkStream, endStream };
