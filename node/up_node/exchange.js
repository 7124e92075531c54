'use strict';
// One request as the Ruby side sees it (env.js reads it, responder.rb and
// stream.rb write through it): what Node parsed, the body already read, where it came in,
// and the calls that send the response. server.js creates one per request once the body has
// arrived; the IncomingMessage and ServerResponse stay Node's.
//
// Strings from Ruby are Opal Strings: JS strings, some boxed in String objects that carry
// encodings. Opal keeps one char per byte in a String whose internal encoding is binary
// (ASCII-8BIT, ISO-8859-1: a binary literal, rack.input's reads): those go out as latin1.
// Every other one holds characters (String#b and force_encoding change only the tag), and
// goes out as UTF-8.

const http = require('node:http');
const { reason } = require('./reason');
const { sendFile, sendfileField } = require('./sendfile');

const BYTE_ENCODINGS = new Set(['ASCII-8BIT', 'ISO-8859-1']);

function encodingOf(part) {
  const internal = part.internal_encoding;
  return internal && BYTE_ENCODINGS.has(internal.name) ? 'latin1' : 'utf8';
}

function bytes(part) {
  return Buffer.from(plain(part), encodingOf(part));
}

// RFC 9110 §6.4.1: no content in these, so no content-length either.
function bodiless(status) {
  return status < 200 || status === 204 || status === 304;
}

// The app's headers, a Ruby Hash (a Map of name to a String or an Array of them), as the
// flat [name, value, name, value...] list Node's writeHead takes: an Array value is one line
// per item (set-cookie is never merged). Node refuses boxed Strings as names and values.
// Stored by index: Opal's bridged Array sends every push to V8's slow path.
function flatten(headers) {
  const flat = [];
  let n = 0;
  for (const [name, value] of headers) {
    const key = plain(name);
    if (value.$$is_array) {
      for (let i = 0; i < value.length; i++) {
        flat[n++] = key;
        flat[n++] = plain(value[i]);
      }
    } else {
      flat[n++] = key;
      flat[n++] = plain(value);
    }
  }
  return flat;
}

// Appends one field to a flattened list (see flatten for why not push).
function addHeader(headers, name, value) {
  const n = headers.length;
  headers[n] = name;
  headers[n + 1] = value;
}

function plain(value) {
  return typeof value === 'string' ? value : String(value);
}

// An Array of the Array class itself (no subclass, no singleton methods) that does not
// respond to close: what `respond_to?(:to_ary)` and `to_ary` say of it is known without
// asking Ruby, and there is nothing to close.
function plainArray(value) {
  if (value == null || Object.getPrototypeOf(value) !== Array.prototype) return false;
  const close = value.$close;
  if (typeof close === 'function' && !close.$$stub) return false;
  return value['$respond_to_missing?'].$$pristine === true;
}

function isString(part) {
  return typeof part === 'string' || (part instanceof String && part.$$is_string === true);
}

// headers: a flattened list. Whether a field is named name or other (lowercase names).
function hasHeader(headers, name, other = name) {
  for (let i = 0; i < headers.length; i += 2) {
    const key = headers[i].toLowerCase();
    if (key === name || key === other) return true;
  }
  return false;
}

// headers (a flattened list) without the fields named name (lowercase).
function withoutField(headers, name) {
  if (!hasHeader(headers, name)) return headers;
  const kept = [];
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i].toLowerCase() !== name) addHeader(kept, headers[i], headers[i + 1]);
  }
  return kept;
}

class Exchange {
  // body: the request body, one char per byte (latin1), '' for none. listener: the
  // { host, port } the connection came in on. server: the http.Server (its `stopping` flag).
  constructor(req, res, body, listener, server) {
    this.req = req;
    this.res = res;
    this.body = body;
    this.listener = listener;
    this.server = server;
    this.status = 200;
    this.headers = [];
    // What the request may become (upgrade.js): 'websocket', 'sse' or null; and for a
    // WebSocket, the bytes that came after its head (Node's 'upgrade' hands them over).
    this.upgrade = null;
    this.upgradeHead = null;
    // The request's fields as [name, value...] (env.js), the authority that replaces Host
    // (HTTP/2's :authority; null here), whether the body's length is known from its framing
    // rather than from Content-Length or chunks (HTTP/2's DATA frames), and the method the
    // app sees.
    this.fields = req.rawHeaders;
    this.authority = null;
    this.framedBody = false;
    this.method = req.method;
  }

  // What the response is written to: the connection here, a stream in HTTP/2.
  get channel() {
    return this.res.socket;
  }

  // The common response, [Integer status, Hash, plain Array of Strings] with no
  // rack.response_finished callbacks, checked and sent in one call, as
  // Up::Node::Responder would send it: false, having done nothing, for any other response,
  // which the Responder then checks and sends. env: the Hash the app was given (it may
  // have changed REQUEST_METHOD or added callbacks).
  sendCommon(status, hash, body, env) {
    if (typeof status !== 'number' || status % 1 !== 0 || status < 100 || status > 999) return false;
    if (hash == null || hash.$$is_hash !== true || !plainArray(body)) return false;
    // An app that took the upgrade: Up::Node::Upgrader's.
    if (this.upgrade !== null && env.has('rack.upgrade')) return false;
    const finished = env.get('rack.response_finished');
    if (!plainArray(finished) || finished.length !== 0) return false;
    const method = env.get('REQUEST_METHOD');
    if (typeof method !== 'string') return false;
    // The Responder closes a bodiless response's body unread, and sends HEAD the length
    // GET would have.
    if (method !== 'HEAD' && bodiless(status)) {
      this.sendParts(status, hash, []);
      return true;
    }
    for (let i = 0; i < body.length; i++) {
      if (!isString(body[i])) return false;
    }
    this.sendParts(status, hash, body);
    return true;
  }

  // An Array body: every part at once, with a content-length unless the app set one. Parts
  // of one encoding (nearly always) become one string, which Node sends in one write after
  // the head it prepends; a Buffer costs a copy and is written after the head.
  sendParts(status, hash, parts) {
    const headers = flatten(hash);
    // An x-sendfile field (Rack::Sendfile's): the file it names is the body (sendfile.js).
    const at = sendfileField(headers);
    if (at >= 0) {
      const path = headers[at + 1];
      headers.splice(at, 2);
      if (!bodiless(status)) {
        sendFile(this, status, headers, path, true, () => {});
        return;
      }
    }
    let body = '';
    const encoding = parts.length === 0 ? 'latin1' : encodingOf(parts[0]);
    for (let i = 0; i < parts.length && body !== null; i++) {
      const part = parts[i];
      body = encodingOf(part) === encoding ? body + plain(part) : null;
    }
    if (body === null) body = Buffer.concat(parts.map(bytes));
    if (!bodiless(status) && !hasHeader(headers, 'content-length', 'transfer-encoding')) {
      const length = typeof body === 'string' ? Buffer.byteLength(body, encoding) : body.length;
      addHeader(headers, 'content-length', String(length));
    }
    this.writeHead(status, headers);
    if (typeof body === 'string') this.endWith(body, encoding);
    else this.res.end(body);
  }

  // res.end(body) queues the head and body behind the socket's cork, then an empty chunk
  // that carries the finish callback, and flushes both with writev. Written and uncorked
  // before end(), the response leaves in one plain write and end() has nothing to queue.
  // That skips Node's Array work on the write path, which Opal slows for the whole
  // process (loading it invalidates V8's NoElements protector, so every push, pop and
  // slice takes the runtime's slow path): 13.4 -> 12.3 us of CPU a hello world.
  endWith(body, encoding) {
    const socket = this.res.socket;
    if (socket) socket.cork();
    this.res.write(body, encoding);
    if (socket) socket.uncork();
    this.res.end();
  }

  // Keeps the status and headers for the first write, so that an `each` that raises before
  // its first part can still become a 500.
  head(status, hash) {
    this.status = status;
    this.headers = flatten(hash);
  }

  write(part) {
    if (!this.res.headersSent) this.writeHead(this.status, this.headers);
    this.res.write(bytes(part));
  }

  end() {
    if (!this.res.headersSent) this.writeHead(this.status, this.headers);
    this.res.end();
  }

  // A to_path body: the file, with ranges and conditional requests (sendfile.js); done()
  // (the Ruby side's close) once it has gone out or failed.
  sendFile(status, hash, path, done) {
    sendFile(this, status, flatten(hash), plain(path), false, done);
  }

  // rack.early_hints: an Up::EarlyHints (opal/up/early_hints.rb, the class of up_ruby's)
  // that sends a 103 with the headers of the Hash it is given, an Array value as one line
  // per item, as up_ruby does. Node's writeEarlyHints would join an Array into one line and
  // send nothing without a link, so the head is made here and goes out through _writeRaw,
  // as writeEarlyHints sends its own: that queues it behind the responses to requests
  // pipelined before this one. HTTP/1.0 knows no 1xx, and a response already begun takes
  // none. A bad name or value raises ArgumentError in the app.
  earlyHintsProc() {
    const Opal = globalThis.Opal;
    return Opal.Up.EarlyHints.$new((headers) => {
      const res = this.res;
      if (this.req.httpVersionMinor === 0 || res.headersSent || res.writableEnded) return Opal.nil;
      let head = 'HTTP/1.1 103 Early Hints\r\n';
      try {
        for (const [name, value] of headers) {
          const key = String(name.$to_s());
          http.validateHeaderName(key);
          for (const one of Opal.top.$Array(value)) {
            const line = String(one.$to_s());
            http.validateHeaderValue(key, line);
            head += `${key}: ${line}\r\n`;
          }
        }
      } catch (error) {
        throw Opal.ArgumentError.$new(`rack.early_hints: ${error.message}`);
      }
      res._writeRaw(`${head}\r\n`, 'latin1');
      return Opal.nil;
    });
  }

  // The app failed: a 500 if nothing was sent yet, else the response is cut off (the
  // connection closes, so the client cannot take a partial body for a whole one).
  fail() {
    if (this.res.headersSent) {
      this.res.destroy();
      return;
    }
    const body = 'Internal Server Error\n';
    this.writeHead(500, ['content-type', 'text/plain; charset=utf-8', 'content-length', String(body.length)]);
    this.res.end(body);
  }

  // fn() once the response is done or the connection is gone (rack.response_finished).
  onFinished(fn) {
    this.res.on('close', () => fn());
  }

  // A response that keeps an HTTP/1.1 connection says nothing of it, keep-alive being 1.1's
  // default (RFC 9112 §9.3), as up_ruby's do: Node would add 'Connection: keep-alive' and
  // 'Keep-Alive: timeout=N'. removeHeader('connection') is Node's way to send neither and
  // still keep the connection; not when the app sent a connection header, which it must
  // then decide. One that closes says 'connection: close' (Node's, or ours while stopping).
  writeHead(status, headers) {
    const res = this.res;
    // RFC 9110 §8.6: no content-length in a 1xx or 204; nor in a 304, where the engine of
    // up_ruby and `up` leaves it out too.
    if (bodiless(status)) headers = withoutField(headers, 'content-length');
    if (this.server.stopping) {
      addHeader(headers, 'connection', 'close');
    } else if (res.shouldKeepAlive && this.req.httpVersionMinor === 1 && !hasHeader(headers, 'connection')) {
      res.removeHeader('connection');
    }
    this.sendHead(status, headers);
  }

  // The head as it is, with the reason phrase HTTP/1.1 sends.
  sendHead(status, headers) {
    this.res.writeHead(status, reason(status), headers);
  }
}

module.exports = { Exchange, flatten, plain, bytes };
