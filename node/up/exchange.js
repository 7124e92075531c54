'use strict';
// One request of `up` as the Ruby side sees it (the interface of node/up_node/exchange.js,
// which Up::Node::Handler and Up::Node::Responder call): what the addon handed over, and the
// calls that send the response through the engine (ext/up/node/exchange.c). serve.js makes one
// per request, inside the addon's call.
//
// Strings from Ruby are Opal Strings: JS strings, some boxed in String objects that carry an
// encoding. One whose internal encoding is binary (ASCII-8BIT, ISO-8859-1) holds one char per
// byte and goes out as latin1; any other holds characters and goes out as UTF-8.

const fs = require('node:fs');
const { META } = require('./env');

const BYTE_ENCODINGS = new Set(['ASCII-8BIT', 'ISO-8859-1']);
// What a request may become, by the engine's up_upgrade_kind_t (meta[META.UPGRADE]).
const UPGRADES = [null, 'websocket', 'sse'];

function isUtf8(part) {
  const internal = part.internal_encoding;
  return !(internal && BYTE_ENCODINGS.has(internal.name));
}

function plain(value) {
  return typeof value === 'string' ? value : String(value);
}

function isString(part) {
  return typeof part === 'string' || (part instanceof String && part.$$is_string === true);
}

// An Array of the Array class itself, without a close of its own: what Ruby would say of
// respond_to?(:to_ary) and close is known without asking it.
function plainArray(value) {
  if (value == null || Object.getPrototypeOf(value) !== Array.prototype) return false;
  const close = value.$close;
  if (typeof close === 'function' && !close.$$stub) return false;
  return value['$respond_to_missing?'].$$pristine === true;
}

// The app's headers, a Ruby Hash (a Map of name to a String or an Array of them), as the
// flat [name, value, ...] list the addon takes: an Array value is one line per item.
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

// Where the x-sendfile field is in a flat list, any case (a Rack 2 app sends X-Sendfile, and
// the path must never reach the client), or -1.
function sendfileField(fields) {
  for (let i = 0; i < fields.length; i += 2) {
    const name = fields[i];
    if (name.length === 10 && name.toLowerCase() === 'x-sendfile') return i;
  }
  return -1;
}

// An Array body as one string and its encoding when every part has the same (nearly always),
// else one Buffer.
function joinParts(parts) {
  if (parts.length === 0) return { body: '', utf8: false };
  const utf8 = isUtf8(parts[0]);
  let body = '';
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    if (isUtf8(part) !== utf8) {
      return { body: Buffer.concat(parts.map((p) => Buffer.from(plain(p), isUtf8(p) ? 'utf8' : 'latin1'))), utf8: false };
    }
    body += plain(part);
  }
  return { body, utf8 };
}

// A response call refused what the app gave (a bad header): raised into the Ruby handler,
// which logs it and fails the exchange.
function refused(what) {
  throw new Error(`invalid response: ${what}`);
}

class Exchange {
  // addon: up.node. head/body/remoteAddr/where/secure: the addon's arguments (serve.js;
  // secure: the connection is TLS); the meta array holds this request's token and layout until
  // the next request.
  constructor(addon, meta, head, body, remoteAddr, where, secure, server) {
    this.addon = addon;
    this.token = meta[0];
    this.minor = meta[META.MINOR];
    this.headText = head;
    this.body = body === undefined ? (meta[META.BODY_FD] >= 0 ? readSpooled(meta) : '') : body;
    this.remoteAddr = remoteAddr;
    this.where = where;
    this.secure = secure;
    this.server = server;
    // What the request may become (websocket.js takes it when the app accepts).
    this.upgrade = UPGRADES[meta[META.UPGRADE]];
    this.status = 200;
    this.headers = null;
    this.headSent = false;
    this.done = false;
    this.finished = null;
    // The app took the socket (rack.hijack): the engine's response calls are over for it.
    this.hijacked = false;
    this.hijackedIO = null;
    // --metrics-url: server.served(status, seconds) once the response is handed to the engine.
    this.started = server.served ? process.hrtime.bigint() : null;
  }

  // The request line's method and target, for log lines.
  get method() {
    return this.headText.slice(0, this.headText.indexOf(' '));
  }

  get target() {
    const start = this.headText.indexOf(' ') + 1;
    return this.headText.slice(start, this.headText.indexOf(' ', start));
  }

  // { host, port } the request came in on, for a request without a host (HTTP/1.0).
  get listener() {
    const space = this.where.lastIndexOf(' ');
    return { host: this.where.slice(0, space), port: this.where.slice(space + 1) };
  }

  // The common response, [Integer status, Hash, plain Array of Strings] with no
  // rack.response_finished callbacks, sent in one call: false, having done nothing, for any
  // other response, which the Responder then checks and sends.
  sendCommon(status, hash, body, env) {
    if (typeof status !== 'number' || status % 1 !== 0 || status < 100 || status > 999) return false;
    if (hash == null || hash.$$is_hash !== true || !plainArray(body)) return false;
    // A partial hijack: the Responder's.
    if (hash.has('rack.hijack')) return false;
    // An app that took the upgrade: Up::Node::Upgrader's.
    if (this.upgrade !== null && env.has('rack.upgrade')) return false;
    const finished = env.get('rack.response_finished');
    if (!plainArray(finished) || finished.length !== 0) return false;
    for (let i = 0; i < body.length; i++) {
      if (!isString(body[i])) return false;
    }
    this.sendParts(status, hash, body);
    return true;
  }

  // An Array body at once; the engine frames it (content-length, HEAD, 204 and 304). A
  // response with an x-sendfile field is the file it names instead (Rack::Sendfile's).
  sendParts(status, hash, parts) {
    const fields = flatten(hash);
    const at = sendfileField(fields);
    if (at >= 0) {
      const path = fields[at + 1];
      fields.splice(at, 2);
      if (status !== 204 && status !== 304) {
        this.sendFileAt(status, fields, path, true);
        return;
      }
    }
    this.status = status;
    const { body, utf8 } = joinParts(parts);
    const error = this.addon.respond(this.token, status, fields, body, utf8);
    if (error !== undefined) refused(error);
    this.over();
  }

  // Keeps the status and headers for the first write, so that an `each` that raises before
  // its first part can still become a 500.
  head(status, hash) {
    this.status = status;
    this.headers = flatten(hash);
  }

  sendHead() {
    if (this.headSent || this.hijacked) return;
    this.headSent = true;
    const error = this.addon.head(this.token, this.status, this.headers || []);
    if (error !== undefined) refused(error);
  }

  write(part) {
    if (this.hijacked) return;
    this.sendHead();
    this.addon.write(this.token, plain(part), isUtf8(part));
  }

  end() {
    if (this.hijacked) return;
    this.sendHead();
    this.addon.finish(this.token);
    this.over();
  }

  // A to_path body: the engine sends the file and answers Range and conditional requests;
  // done() is the Ruby side's close. A file gone since the Ruby side saw it is a 500.
  sendFile(status, hash, path, done) {
    try {
      this.sendFileAt(status, flatten(hash), plain(path), false);
    } finally {
      done();
    }
  }

  // The file at path as the response (ext/up/node/sendfile.c). fromField: the path came from
  // x-sendfile, whose file the engine answers 404 or 500 for itself when it cannot open it.
  sendFileAt(status, fields, path, fromField) {
    this.status = status;
    const result = this.addon.sendFile(this.token, status, fields, path, fromField);
    if (result === false) {
      this.fail();
      return;
    }
    if (result !== undefined) refused(result);
    this.over();
  }

  // rack.early_hints: an Up::EarlyHints (opal/up/early_hints.rb, the class of up_ruby's)
  // sending a 103 with the Hash's fields, an Array value as one line per item. HTTP/1.0
  // knows no 1xx, and a response already begun takes none.
  earlyHintsProc() {
    const Opal = globalThis.Opal;
    return Opal.Up.EarlyHints.$new((headers) => {
      if (this.minor === 0 || this.headSent || this.done) return Opal.nil;
      const flat = [];
      for (const [name, value] of headers) {
        for (const one of Opal.top.$Array(value)) flat.push(String(name.$to_s()), String(one.$to_s()));
      }
      const error = this.addon.earlyHints(this.token, flat);
      if (error !== undefined) throw Opal.ArgumentError.$new(`rack.early_hints: ${error}`);
      return Opal.nil;
    });
  }

  // rack.hijack: a Ruby lambda whose call is a full hijack (fullHijack). Over TLS there is
  // none (env.js): the engine's TLS session cannot go with the socket.
  hijackProc(env) {
    return globalThis.Opal.lambda(() => this.fullHijack(env));
  }

  // The socket as an Up::Node::HijackedIO, before any response: the server writes nothing for
  // this request, and the app's response is ignored (Up::Node::Handler). The same IO again on
  // a second call; env's rack.hijack_io too, for Rack 2 apps. IOError once a response began or
  // the request is over, or when the client is gone.
  fullHijack(env) {
    const Opal = globalThis.Opal;
    if (this.hijackedIO !== null) return this.hijackedIO;
    if (this.done) throw Opal.IOError.$new('rack.hijack called after the request was over');
    if (this.headSent) throw Opal.IOError.$new('rack.hijack called after the response began');
    const socket = this.takeSocket(null, null);
    if (socket === null) throw Opal.IOError.$new('the client closed the connection');
    this.hijackedIO = Opal.Up.Node.HijackedIO.$new(socket);
    env.set('rack.hijack_io', this.hijackedIO);
    return this.hijackedIO;
  }

  // A partial hijack (a callable under the rack.hijack response header, or a 101 with a
  // callable body): the head of status and hash (a Hash without rack.hijack) goes out
  // unframed, then the socket comes to the HijackedSocket returned; null when the client is
  // gone. Throws, having sent nothing, for a head the engine refuses.
  partialHijack(status, hash) {
    const fields = flatten(hash);
    return this.takeSocket(status, fields);
  }

  takeSocket(status, fields) {
    // Required here, not above: hijack.js takes plain and isUtf8 from this file.
    const { HijackedSocket } = require('./hijack');
    const socket = new HijackedSocket();
    const answer = this.addon.hijack(this.token, status, fields, (fd, unread) => {
      if (this.finished !== null) this.finished();
      socket.attach(fd, unread);
    });
    if (typeof answer === 'string') refused(answer);
    this.hijacked = true;
    if (answer === false) {
      this.status = 0; // the client is gone: nothing was sent
      this.addon.fail(this.token);
      this.over();
      return null;
    }
    this.done = true;
    return socket;
  }

  // The app failed: a 500 if nothing was sent yet, else the connection closes after what
  // was (the client cannot take a cut body for a whole one).
  fail() {
    if (this.done) return;
    if (!this.headSent) this.status = 500;
    this.addon.fail(this.token);
    this.over();
  }

  // fn() once the response is done (rack.response_finished).
  onFinished(fn) {
    this.finished = fn;
  }

  over() {
    this.done = true;
    if (this.started !== null) this.server.served(this.status, Number(process.hrtime.bigint() - this.started) / 1e9);
    if (this.finished !== null) this.finished();
  }
}

// A body the engine spooled to a file (past --spool-threshold... the engine's own), read
// whole: rack.input is a String on this runtime, as on up_node.
function readSpooled(meta) {
  const length = meta[META.BODY_LENGTH];
  const buffer = Buffer.allocUnsafe(length);
  let read = 0;
  while (read < length) {
    const n = fs.readSync(meta[META.BODY_FD], buffer, read, length - read, read);
    if (n === 0) break;
    read += n;
  }
  return buffer.toString('latin1', 0, read);
}

module.exports = { Exchange, flatten, plain, isUtf8 };
