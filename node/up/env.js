'use strict';
// Builds each request's Rack env for `up` from what the addon hands over (ext/up/node/
// exchange.c): the head as one latin1 string and the parser's slices as offsets in the meta
// Int32Array. Same keys, value types and values as up_ruby's (ext/up/ruby/env.c) and
// up_node's (node/up_node/env.js). One per process, made by serve.js; it owns the values
// every env shares and a table of header names to env keys.
//
// The env is a Map filled with set(): in Opal 1.8 that is the Hash the app gets.

// Header names remembered with their keys (as the client spelled them, so that no
// toLowerCase runs for a known name); past this many, new names are computed each time, so
// a client sending made-up names cannot grow the table without bound.
const MAX_KEYS = 500;

// The meta array's layout (ext/up/node/addon.h).
const META = {
  MINOR: 1, NUM_HEADERS: 2, METHOD: 3, TARGET: 5, PATH: 7, QUERY: 9, HOST: 11, ABSOLUTE: 13,
  CHUNKED: 14, BODY_FD: 15, BODY_LENGTH: 16, UPGRADE: 17, HTTP2: 18, HEADERS: 20,
};

class EnvBuilder {
  // Opal: the runtime. errors: rack.errors (an Up::Node::ErrorStream). meta: the addon's
  // Int32Array, rewritten for every request.
  constructor(Opal, version, multiprocess, errors, meta) {
    this.Input = Opal.Up.Node.Input;
    this.emptyInput = this.Input.$new('');
    this.nil = Opal.nil;
    this.software = `UP! ${version}`;
    this.rackVersion = Opal.freeze([1, 3]);
    this.errors = errors;
    this.multiprocess = multiprocess;
    this.meta = meta;
    this.keys = new Map();
  }

  // The slice at meta[at] (offset, length) of head; -1 is an absolute-form target's "/".
  slice(head, at) {
    const off = this.meta[at];
    if (off < 0) return '/';
    return head.slice(off, off + this.meta[at + 1]);
  }

  build(exchange) {
    const head = exchange.headText;
    const meta = this.meta;
    const env = new Map();
    env.set('SCRIPT_NAME', '');
    env.set('SERVER_SOFTWARE', this.software);
    env.set('GATEWAY_INTERFACE', 'CGI/1.2');
    env.set('rack.version', this.rackVersion);
    env.set('rack.url_scheme', exchange.secure ? 'https' : 'http');
    // CGI's HTTPS: present only over TLS, as up_ruby sets it.
    if (exchange.secure) env.set('HTTPS', 'on');
    env.set('rack.errors', this.errors);
    env.set('rack.multithread', false); // one JS thread runs every app call
    env.set('rack.multiprocess', this.multiprocess);
    env.set('rack.run_once', false);
    // Full and partial hijack (exchange.js, hijack.js), but over TLS: the engine's session
    // cannot go with the socket (as on up_ruby).
    // An HTTP/2 stream has no socket of its own.
    const hijackable = !exchange.secure && meta[META.HTTP2] === 0;
    env.set('rack.hijack?', hijackable);
    if (hijackable) env.set('rack.hijack', exchange.hijackProc(env));
    // What Rack::Sendfile reads: it then answers a to_path body with an x-sendfile field,
    // which the engine sends from the file (exchange.js, ext/up/node/sendfile.c).
    env.set('sendfile.type', 'x-sendfile');
    const path = this.slice(head, META.PATH);
    env.set('REQUEST_METHOD', this.slice(head, META.METHOD));
    let protocol = meta[META.MINOR] === 0 ? 'HTTP/1.0' : 'HTTP/1.1';
    if (meta[META.HTTP2] === 1) protocol = 'HTTP/2';
    env.set('SERVER_PROTOCOL', protocol);
    env.set('PATH_INFO', path);
    env.set('REQUEST_PATH', path);
    env.set('QUERY_STRING', this.slice(head, META.QUERY));
    env.set('REQUEST_URI', this.slice(head, META.TARGET));
    env.set('REMOTE_ADDR', exchange.remoteAddr);
    const body = exchange.body;
    env.set('rack.input', body === '' ? this.emptyInput : this.Input.$new(body));
    env.set('rack.early_hints', exchange.earlyHintsProc());
    env.set('rack.response_finished', []);
    // docs/websockets.md: on every request, :websocket, :sse (Symbols are Strings
    // in Opal) or nil, as the engine found (exchange.js).
    env.set('rack.upgrade?', exchange.upgrade === null ? this.nil : exchange.upgrade);
    this.addHeaders(env, head, meta[META.NUM_HEADERS]);
    const host = meta[META.HOST + 1] > 0 ? this.slice(head, META.HOST) : null;
    // RFC 9112 §3.2.2: an absolute-form target's authority replaces Host.
    if (meta[META.ABSOLUTE] === 1 && host !== null) env.set('HTTP_HOST', host);
    if (meta[META.CHUNKED] === 1) env.set('CONTENT_LENGTH', String(body.length));
    this.addServerName(env, host, exchange);
    return env;
  }

  // Repeated fields become one value, joined as RFC 9110 §5.3 says (cookies with "; ",
  // RFC 6265 §5.4). "X_Forwarded_For" and "X-Forwarded-For" share one key; a client must not
  // override what a proxy set, so an underscore spelling counts only when no dash spelling
  // came (the first of them wins).
  addHeaders(env, head, count) {
    let underscored = null;
    for (let i = 0; i < count; i++) {
      const at = META.HEADERS + 4 * i;
      const name = this.slice(head, at);
      const value = this.slice(head, at + 2);
      if (name.includes('_')) {
        (underscored || (underscored = [])).push(name, value);
        continue;
      }
      const key = this.keyFor(name);
      const old = env.get(key);
      env.set(key, old === undefined ? value : `${old}${key === 'HTTP_COOKIE' ? '; ' : ', '}${value}`);
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
    const lower = name.toLowerCase();
    if (lower === 'content-length') key = 'CONTENT_LENGTH';
    else if (lower === 'content-type') key = 'CONTENT_TYPE';
    else key = `HTTP_${lower.toUpperCase().replace(/-/g, '_')}`;
    if (this.keys.size < MAX_KEYS) this.keys.set(name, key);
    return key;
  }

  // SERVER_NAME and SERVER_PORT from the host (Host, or an absolute target's authority),
  // else from the address the request came in on. As up_http1_split_authority: brackets
  // kept around an IPv6 host, the port after them or after the first colon.
  addServerName(env, host, exchange) {
    if (host === null) {
      const listener = exchange.listener;
      env.set('SERVER_NAME', listener.host);
      env.set('SERVER_PORT', listener.port);
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
    env.set('SERVER_PORT', port === '' ? (exchange.secure ? '443' : '80') : port);
  }
}

module.exports = { EnvBuilder, META };
