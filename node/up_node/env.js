'use strict';
// Builds each request's Rack env from an Exchange (exchange.js) with the keys, value types
// and values up_ruby gives (ext/up/ruby/env.c): strings are one char per byte, as Node
// decodes heads (latin1). One per process, made by worker.js; it owns the values every env
// shares and a table of header names to env keys.
//
// Built here rather than in Ruby because in Opal 1.8 a Hash is a JS Map whose String keys
// are stored as they are: a Map filled with set() is the Hash the app gets, with no
// conversion, and no Opal dispatch or Ruby String calls per key. In the profile of hello.ru
// the Ruby builder (Hash#dup, String#partition, #start_with?, #downcase...) was 8% of the
// process and the largest cost of ours after the write itself.

// Header names remembered with their keys; past this many, new names are computed each time,
// so a client sending made-up names cannot grow the table without bound.
const MAX_KEYS = 500;

const ABSOLUTE_FORM = /^https?:\/\//;

class EnvBuilder {
  // Opal: the runtime (globalThis.Opal). errors: rack.errors (an Up::Node::ErrorStream).
  constructor(Opal, version, multiprocess, errors) {
    this.Input = Opal.Up.Node.Input;
    this.emptyInput = this.Input.$new('');
    this.nil = Opal.nil;
    // The values every env shares.
    this.software = `UP! ${version}`;
    this.rackVersion = Opal.freeze([1, 3]);
    this.errors = errors;
    this.multiprocess = multiprocess;
    this.keys = new Map([['content-length', 'CONTENT_LENGTH'], ['content-type', 'CONTENT_TYPE']]);
  }

  build(exchange) {
    const req = exchange.req;
    // One set() a key: new Map(template) takes V8's generic iterator path, and was 6% of a
    // hello world's CPU.
    const env = new Map();
    env.set('SCRIPT_NAME', '');
    env.set('SERVER_SOFTWARE', this.software);
    env.set('GATEWAY_INTERFACE', 'CGI/1.2');
    env.set('rack.version', this.rackVersion);
    const secure = exchange.listener.secure;
    env.set('rack.url_scheme', secure ? 'https' : 'http');
    if (secure) env.set('HTTPS', 'on');
    env.set('rack.errors', this.errors);
    env.set('rack.multithread', false); // one JS thread runs every app call
    env.set('rack.multiprocess', this.multiprocess);
    env.set('rack.run_once', false);
    env.set('rack.hijack?', false);
    // What Rack::Sendfile reads: it then answers a to_path body with an x-sendfile field,
    // which exchange.js sends from the file (sendfile.js).
    env.set('sendfile.type', 'x-sendfile');
    // RFC 9112 §3.2: origin form, or an absolute form whose authority replaces Host; in
    // HTTP/2, :authority replaces it (RFC 9113 §8.3.1).
    let target = req.url;
    let authority = exchange.authority;
    if (ABSOLUTE_FORM.test(target)) {
      const rest = target.replace(ABSOLUTE_FORM, '');
      let slash = rest.search(/[/?]/);
      if (slash < 0) slash = rest.length;
      authority = rest.slice(0, slash);
      target = rest.slice(slash);
    }
    const mark = target.indexOf('?');
    const path = mark < 0 ? target : target.slice(0, mark);
    env.set('REQUEST_METHOD', exchange.method);
    const version = req.httpVersion;
    env.set('SERVER_PROTOCOL', version === '1.1' ? 'HTTP/1.1' : version === '1.0' ? 'HTTP/1.0' : 'HTTP/2');
    env.set('PATH_INFO', path);
    env.set('REQUEST_PATH', path);
    env.set('QUERY_STRING', mark < 0 ? '' : target.slice(mark + 1));
    env.set('REQUEST_URI', req.url);
    env.set('REMOTE_ADDR', req.socket.remoteAddress || '');
    const body = exchange.body;
    env.set('rack.input', body === '' ? this.emptyInput : this.Input.$new(body));
    env.set('rack.early_hints', exchange.earlyHintsProc());
    env.set('rack.response_finished', []);
    // docs/websockets.md: on every request; :websocket, :sse (a Symbol is a String
    // in Opal) or nil, as upgrade.js found.
    env.set('rack.upgrade?', exchange.upgrade === null ? this.nil : exchange.upgrade);
    this.addHeaders(env, exchange.fields);
    if (authority !== null) env.set('HTTP_HOST', authority);
    // A body whose length no field gave (chunked, or HTTP/2 without content-length).
    if (exchange.framedBody ? body !== '' && !env.has('CONTENT_LENGTH') : env.has('HTTP_TRANSFER_ENCODING')) {
      env.set('CONTENT_LENGTH', String(body.length));
    }
    this.addServerName(env, exchange.listener);
    return env;
  }

  // Repeated fields become one value, joined as RFC 9110 §5.3 says (cookies with "; ",
  // RFC 6265 §5.4). "X_Forwarded_For" and "X-Forwarded-For" share one key; a client must not
  // override what a proxy set, so an underscore spelling counts only when no dash spelling
  // came (the first of them wins).
  addHeaders(env, raw) {
    let underscored = null;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i].toLowerCase();
      const value = raw[i + 1];
      if (name.includes('_')) {
        (underscored || (underscored = [])).push(name, value);
        continue;
      }
      const key = this.keyFor(name);
      const old = env.get(key);
      env.set(key, old === undefined ? value : `${old}${name === 'cookie' ? '; ' : ', '}${value}`);
    }
    if (underscored === null) return;
    for (let i = 0; i < underscored.length; i += 2) {
      const key = this.keyFor(underscored[i]);
      if (!env.has(key)) env.set(key, underscored[i + 1]);
    }
  }

  keyFor(name) {
    let key = this.keys.get(name);
    if (key !== undefined) return key;
    key = `HTTP_${name.toUpperCase().replace(/-/g, '_')}`;
    if (this.keys.size < MAX_KEYS) this.keys.set(name, key);
    return key;
  }

  // SERVER_NAME and SERVER_PORT from Host, else from the address the request came in on.
  // As up_http1_split_authority: brackets kept around an IPv6 host, the port after them or
  // after the first colon.
  addServerName(env, listener) {
    const host = env.get('HTTP_HOST');
    if (host === undefined) {
      env.set('SERVER_NAME', listener.host);
      env.set('SERVER_PORT', String(listener.port));
      return;
    }
    let name;
    let port;
    if (host.startsWith('[')) {
      let close = host.indexOf(']');
      if (close < 0) close = host.length - 1;
      name = host.slice(0, close + 1);
      port = host.slice(close + 1);
      if (port.startsWith(':')) port = port.slice(1);
    } else {
      const colon = host.indexOf(':');
      name = colon < 0 ? host : host.slice(0, colon);
      port = colon < 0 ? '' : host.slice(colon + 1);
    }
    env.set('SERVER_NAME', name === '' ? 'localhost' : name);
    env.set('SERVER_PORT', port !== '' ? port : listener.secure ? '443' : '80');
  }
}

module.exports = { EnvBuilder };
