'use strict';
// Static files for up_node, answered before the app with the rules of up_ruby's engine
// (ext/up/engine/handlers/static_file.h), so that a file gets the same answer, byte for byte but the
// date and a multipart boundary, from both runtimes. server.js asks handle() about every
// request it would hand to the app; settings come from Up::StaticFiles#to_h (the same Hash
// up_ruby's engine gets), through Up::Node::Launcher, as options.static.
//
// Where files come from: mounts, each a URL prefix and directories; a path is looked for under
// the mounts it starts with, longest prefix first, and in each mount's directories in order.
// What a response says (RFC 9110): content-type from Rack::Mime's table (charset=utf-8 for
// text); the engine's etag ("MTIME_SEC.MTIME_NSEC-SIZE" in hex, "-CODING" for a variant) and
// last-modified; 304 and 412 (static_fields.js); Range: single, suffix, open, several
// (multipart/byteranges), 416 with "content-range: bytes */SIZE"; If-Range both ways; HEAD
// without a body; a .br, .zst or .gz sibling by Accept-Encoding, with "vary: accept-encoding"
// on every response for a file that has one; index.html and a 301 to the slash form; a year of
// immutable cache-control for /assets/NAME-HEX.EXT; an HTML listing with --dir-listing; the
// site config (clean URLs, an error page, fields and redirects by glob, https_only).
//
// Safety: the path is decoded once and checked (static_path.js) before the disk is asked, and
// what was opened is checked to lie beneath its root by the path the kernel gives its
// descriptor (/proc/self/fd), so a symlink out of the root is refused whatever it points to.
// Nothing is cached: each request opens and stats its file, so a changed file is served new at
// once (the engine's cache notices within a second).

const fs = require('node:fs');
const net = require('node:net');
const { randomBytes } = require('node:crypto');
const { promisify } = require('node:util');
const { exchangeFor } = require('./http2_exchange');
const { decodePath } = require('./static_path');
const fields = require('./static_fields');

const open = promisify(fs.open);
const fstat = promisify(fs.fstat);
const readlink = promisify(fs.readlink);
const readdir = promisify(fs.readdir);
const stat = promisify(fs.stat);
const closeQuietly = (fd) => fs.close(fd, () => {});

const OPEN_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY;
// One year, the longest max-age RFC 9111 §5.2.2.1 advises; "immutable" is RFC 8246.
const IMMUTABLE = 'public, max-age=31536000, immutable';
// Fewer hex digits than this after the last '-' is a name, not a digest ("jquery-3.js").
const MIN_DIGEST = 7;
const DEFAULT_TYPE = 'application/octet-stream';
const MAX_EXT = 32;
const MAX_LISTING = 1000;
const SUFFIXES = { br: '.br', zstd: '.zst', gzip: '.gz' };
const TEXTUAL = new Set(['application/javascript', 'application/json', 'application/xml',
  'application/xhtml+xml', 'application/manifest+json', 'image/svg+xml']);

// ---------------------------------------------------------------- configuration

// Rack::Mime's table ({".css": "text/css"}) as the engine keeps it (mime.c): extensions in
// lower case, text types with a charset.
function mimeTable(types) {
  const table = new Map();
  for (const [ext, type] of Object.entries(types || {})) {
    const name = ext.startsWith('.') ? ext.slice(1) : ext;
    if (name === '' || name.length > MAX_EXT) continue;
    const text = (type.startsWith('text/') || TEXTUAL.has(type)) && !type.includes(';');
    table.set(name.toLowerCase(), text ? `${type}; charset=utf-8` : type);
  }
  return table;
}

// A path glob (path_glob.h): "*" within a segment, "**" across them, "?" one byte but '/'.
function globRegExp(glob) {
  let source = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        while (glob[i + 1] === '*') i++;
        source += '.*';
      } else {
        source += '[^/]*';
      }
    } else if (c === '?') {
      source += '[^/]';
    } else {
      source += c.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
    }
  }
  return new RegExp(`^${source}$`, 's');
}

function trustedProxies(list) {
  const block = new net.BlockList();
  for (const cidr of list || []) {
    const [address, bits] = cidr.split('/');
    const type = net.isIPv6(address) ? 'ipv6' : 'ipv4';
    if (bits === undefined) block.addAddress(address, type);
    else block.addSubnet(address, Number(bits), type);
  }
  return block;
}

// The mounts, longest prefix first (a prefix given again adds directories after its first).
function mountsOf(dirs) {
  const mounts = [];
  for (const [urlPrefix, dir] of dirs) {
    const prefix = urlPrefix === '/' ? '' : decodePath(urlPrefix, true).path;
    let mount = mounts.find((m) => m.prefix === prefix);
    if (!mount) {
      mount = { prefix, roots: [] };
      let at = 0;
      while (at < mounts.length && mounts[at].prefix.length >= prefix.length) at++;
      mounts.splice(at, 0, mount);
    }
    const real = fs.realpathSync(dir);
    mount.roots.push({ real, beneath: real === '/' ? '/' : `${real}/` });
  }
  return mounts;
}

// ---------------------------------------------------------------- small answers

function htmlEscape(text) {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);
}

// A name as an href's path segment: every byte but the unreserved ones percent-encoded.
function hrefOf(bytes) {
  let out = '';
  for (const c of bytes) {
    const ch = String.fromCharCode(c);
    out += /[A-Za-z0-9\-._~]/.test(ch) ? ch : `%${c.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

// A name a request could name (static_file.c's listable): UTF-8, no control byte, no
// backslash; a dotfile only when they are served. Returns its text, or null.
function listable(name, dotfiles) {
  if (name.length === 0 || (name[0] === 0x2e && !dotfiles)) return null;
  if (name.length <= 2 && name.every((c) => c === 0x2e)) return null;
  if (name.some((c) => c < 0x20 || c === 0x7f || c === 0x5c)) return null;
  try {
    return UTF8.decode(name);
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------- the handler

class StaticFiles {
  // settings: Up::StaticFiles#to_h as JSON. server: the http.Server (its stopping flag).
  constructor(settings, server) {
    this.server = server;
    this.only = settings.only === true;
    this.dotfiles = settings.dotfiles === true;
    this.dirListing = settings.dir_listing === true;
    this.cleanUrls = settings.clean_urls === true;
    this.httpsOnly = settings.https_only === true;
    this.mime = mimeTable(settings.mime);
    this.mounts = mountsOf(settings.dirs);
    this.errorPage = settings.error_page ? decodePath(settings.error_page, true).path : null;
    this.rules = (settings.headers || []).map(([glob, name, value]) => (
      { glob: globRegExp(glob), name, value, cacheControl: name.toLowerCase() === 'cache-control' }));
    this.redirects = (settings.redirects || []).map(([glob, location, status]) => ({ glob: globRegExp(glob), location, status }));
    this.proxies = trustedProxies(settings.trusted_proxies);
  }

  // Whether req is taken: true when it is answered here (now or once the disk has said), or
  // will be handed on by calling next() (a miss); false when it is the app's (nothing done).
  handle(req, res, next) {
    const method = req.method;
    if (method !== 'GET' && method !== 'HEAD') {
      if (!this.only) return false;
      this.send(req, res, 405, ['allow', 'GET, HEAD', 'content-type', 'text/plain; charset=utf-8'], 'Method Not Allowed\n');
      return true;
    }
    const request = new StaticRequest(this, req, res, next);
    request.run().catch(() => request.fail());
    return true;
  }

  // A whole response. headers: a flat [name, value...] list; body: a string or Buffer, or null.
  send(req, res, status, headers, body) {
    if (body !== null) headers.push('content-length', String(Buffer.byteLength(body)));
    exchangeFor(req, res, '', null, this.server).writeHead(status, headers);
    if (body !== null && req.method !== 'HEAD') res.end(body);
    else res.end();
  }

  // up_response_send_simple: a line of text.
  simple(req, res, status, text) {
    this.send(req, res, status, ['content-type', 'text/plain; charset=utf-8'], `${text}\n`);
  }

  redirect(req, res, status, location) {
    this.send(req, res, status, ['location', location, 'content-type', 'text/plain; charset=utf-8'], 'Moved\n');
  }

  typeOf(path) {
    let dot = path.length;
    while (dot > 0 && path[dot - 1] !== '.' && path[dot - 1] !== '/') dot--;
    if (dot <= 1 || path[dot - 1] !== '.' || path[dot - 2] === '/' || path.length === dot) return DEFAULT_TYPE;
    const ext = path.slice(dot);
    if (Buffer.byteLength(ext) > MAX_EXT) return DEFAULT_TYPE;
    return this.mime.get(ext.toLowerCase()) || DEFAULT_TYPE;
  }
}

// What a regular file or directory under a root is now: { fd, stat, real } with its
// descriptor open, or null. A name that leads (by a symlink) outside the root, a FIFO, a
// device: null.
async function openBeneath(root, rel) {
  let fd;
  try {
    fd = await open(rel === '' ? root.real : `${root.beneath}${rel}`, OPEN_FLAGS);
  } catch {
    return null;
  }
  try {
    const info = await fstat(fd, { bigint: true });
    if (!info.isFile() && !info.isDirectory()) throw new Error('not a file');
    const real = await readlink(`/proc/self/fd/${fd}`);
    if (real !== root.real && !real.startsWith(root.beneath)) throw new Error('outside the root');
    return { fd, stat: info, real };
  } catch {
    closeQuietly(fd);
    return null;
  }
}

// One representation (the file, or a variant): its descriptor, size and validators.
function representation(found, coding) {
  const ns = found.stat.mtimeNs;
  const sec = ns / 1000000000n;
  const size = Number(found.stat.size);
  const suffix = coding === 'identity' ? '' : `-${coding}`;
  return {
    fd: found.fd,
    size,
    mtime: Number(sec),
    etag: `"${sec.toString(16)}.${(ns % 1000000000n).toString(16)}-${size.toString(16)}${suffix}"`,
    lastModified: new Date(Number(sec) * 1000).toUTCString(),
  };
}

// Collects the fields a static answer reads, by lines as the engine's read_fields does.
function requestFields(req) {
  const f = {
    ifMatch: [], ifNoneMatch: [], ifModifiedSince: [], ifUnmodifiedSince: [], ifRange: [],
    acceptEncoding: [], range: [], forwardedProto: null, host: null,
  };
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const value = raw[i + 1];
    switch (raw[i].toLowerCase()) {
      case 'range': f.range.push(value); break;
      case 'if-match': f.ifMatch.push(value); break;
      case 'if-range': f.ifRange.push(value); break;
      case 'if-none-match': f.ifNoneMatch.push(value); break;
      case 'accept-encoding': f.acceptEncoding.push(value); break;
      case 'if-modified-since': f.ifModifiedSince.push(value); break;
      case 'if-unmodified-since': f.ifUnmodifiedSince.push(value); break;
      case 'x-forwarded-proto': if (f.forwardedProto === null) f.forwardedProto = value; break;
      // RFC 9113 §8.3.1: HTTP/2's :authority stands for Host (a Host beside it must agree).
      case ':authority': f.host = value; break;
      case 'host': if (f.host === null) f.host = value; break;
      default: break;
    }
  }
  return f;
}

// RFC 9112 §3.2: the target's path and query, of the origin or the absolute form; null for
// another form.
function splitTarget(url) {
  let target = url;
  let authority = null;
  const absolute = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.exec(target);
  if (absolute) {
    const rest = target.slice(absolute[0].length);
    let slash = rest.search(/[/?]/);
    if (slash < 0) slash = rest.length;
    authority = rest.slice(0, slash);
    target = rest.slice(slash);
  } else if (!target.startsWith('/')) {
    return null;
  }
  const mark = target.indexOf('?');
  return {
    path: mark < 0 ? target : target.slice(0, mark),
    query: mark < 0 ? '' : target.slice(mark + 1),
    authority,
  };
}

class StaticRequest {
  constructor(statics, req, res, next) {
    this.st = statics;
    this.req = req;
    this.res = res;
    this.next = next;
    this.fields = requestFields(req);
    this.now = Math.floor(Date.now() / 1000);
    this.open = [];
  }

  async run() {
    const st = this.st;
    if (this.httpsOnly()) return;
    const target = splitTarget(this.req.url);
    if (target === null) return this.miss();
    this.target = target;
    const decoded = decodePath(target.path, st.dotfiles);
    if (decoded.error) return this.miss();
    this.path = decoded.path;
    this.dir = decoded.dir;
    this.url = `/${decoded.path}${decoded.dir && decoded.path !== '' ? '/' : ''}`;
    const redirect = st.redirects.find((r) => r.glob.test(this.url));
    if (redirect) return st.redirect(this.req, this.res, redirect.status, redirect.location);
    const found = await this.find();
    if (found === 'answered') return this.closeAll();
    if (found !== null) return this.sendFile(found, 200);
    return this.miss();
  }

  // An error of ours (a descriptor that failed mid-way): a 500, or a cut connection.
  fail() {
    this.closeAll();
    if (this.res.headersSent) this.res.destroy();
    else this.st.simple(this.req, this.res, 500, 'Internal Server Error');
  }

  closeAll() {
    for (const fd of this.open) closeQuietly(fd);
    this.open = [];
  }

  // ---- https_only

  // Whether the client reached us over HTTPS: its own connection, or a trusted proxy's word
  // (the first value of X-Forwarded-Proto).
  isSecure() {
    if (this.req.socket.encrypted) return true;
    const proto = this.fields.forwardedProto;
    if (proto === null) return false;
    let address = this.req.socket.remoteAddress || '';
    if (address.startsWith('::ffff:') && net.isIPv4(address.slice(7))) address = address.slice(7);
    const type = net.isIPv6(address) ? 'ipv6' : 'ipv4';
    if (!net.isIP(address) || !this.st.proxies.check(address, type)) return false;
    return /^https$/i.test(proto.split(/[, \t]/)[0]);
  }

  // Sends a plain-HTTP request to https://. Returns true when it answered.
  httpsOnly() {
    const st = this.st;
    if (!st.httpsOnly || this.isSecure()) return false;
    const target = splitTarget(this.req.url) || { path: this.req.url, query: '' };
    const host = target.authority !== null ? target.authority : this.fields.host;
    if (!host) {
      st.simple(this.req, this.res, 403, 'This site is served over HTTPS only');
      return true;
    }
    const query = target.query.length > 0 ? `?${target.query}` : '';
    st.redirect(this.req, this.res, 301, `https://${host}${target.path}${query}`);
    return true;
  }

  // ---- lookup

  // The regular file or directory rel names under root ({ fd, stat, real }, its descriptor
  // kept for this request), or null.
  async entry(root, rel) {
    const found = await openBeneath(root, rel);
    if (found !== null) this.open.push(found.fd);
    return found;
  }

  async regularFile(root, rel) {
    const found = await this.entry(root, rel);
    return found !== null && found.stat.isFile() ? found : null;
  }

  // Finds what the path names: { file, path } (path: the file's name, for its type), the
  // string 'answered' (a redirect to the slash form, a listing), or null.
  async find() {
    const st = this.st;
    const path = this.path;
    for (const mount of st.mounts) {
      const p = mount.prefix;
      if (p !== '' && !(path === p || path.startsWith(`${p}/`))) continue;
      const sub = p === '' ? path : path.slice(Math.min(path.length, p.length + 1));
      const under = (rel) => (p === '' ? rel : `${p}/${rel}`); // rel's path from the URL root
      for (const root of mount.roots) {
        const e = await this.entry(root, sub);
        if (e !== null && e.stat.isFile()) {
          if (this.dir) continue; // "/app.css/" names no file
          return { file: e, root, rel: sub, path };
        }
        if (!this.dir && sub !== '' && st.cleanUrls) {
          const html = await this.regularFile(root, `${sub}.html`);
          if (html !== null) return { file: html, root, rel: `${sub}.html`, path: under(`${sub}.html`) };
        }
        if (e === null) continue;
        if (!this.dir) {
          // The path as the client sent it (still encoded), which the decoder found free of
          // "//": the Location cannot point to another host.
          const query = this.target.query.length > 0 ? `?${this.target.query}` : '';
          st.redirect(this.req, this.res, 301, `${this.target.path}/${query}`);
          return 'answered';
        }
        const indexRel = sub === '' ? 'index.html' : `${sub}/index.html`;
        const index = await this.regularFile(root, indexRel);
        if (index !== null) return { file: index, root, rel: indexRel, path: under(indexRel) };
        if (st.dirListing && await this.sendListing(e.real)) return 'answered';
      }
    }
    return null;
  }

  // A request that is no file's: the app's, or a 404 without one.
  miss() {
    if (!this.st.only) {
      this.closeAll();
      return this.next();
    }
    return this.notFound();
  }

  // A 404 answered here: the error page (a file under the "/" mount), or a line of text.
  async notFound() {
    const st = this.st;
    if (st.errorPage !== null) {
      for (const mount of st.mounts) {
        if (mount.prefix !== '') continue;
        for (const root of mount.roots) {
          const page = await this.regularFile(root, st.errorPage);
          if (page !== null) return this.sendFile({ file: page, root, rel: st.errorPage, path: st.errorPage }, 404);
        }
      }
    }
    this.closeAll();
    st.simple(this.req, this.res, 404, 'Not Found');
  }

  // The file's precompressed siblings no older than it: { coding: found }.
  async variants(found) {
    const identity = Number(found.file.stat.mtimeNs / 1000000000n);
    const out = {};
    for (const coding of fields.CODINGS) {
      const v = await this.regularFile(found.root, `${found.rel}${SUFFIXES[coding]}`);
      // A variant older than its file was made from an older version of it.
      if (v !== null && Number(v.stat.mtimeNs / 1000000000n) >= identity) out[coding] = v;
    }
    return out;
  }

  // ---- file responses

  // Whether the URL names a fingerprinted asset: under /assets/, a last segment
  // NAME-DIGEST.EXT with a hex digest (Sprockets, Propshaft), or a ".digested." name.
  fingerprinted(path) {
    if (!path.startsWith('assets/')) return false;
    const name = path.slice(path.lastIndexOf('/') + 1);
    if (name.includes('.digested.')) return true;
    const dot = name.indexOf('.', 1);
    if (dot < 0) return false;
    let p = dot;
    while (p > 0 && /[0-9a-f]/.test(name[p - 1])) p--;
    return p > 0 && name[p - 1] === '-' && dot - p >= MIN_DIGEST;
  }

  // The fields of every response about the file (200, 206, 304, 416).
  validatorFields(headers, rep, hasVariants, path) {
    headers.push('etag', rep.etag, 'last-modified', rep.lastModified);
    // On every response for a file with variants, whichever was chosen (RFC 9110 §12.5.5).
    if (hasVariants) headers.push('vary', 'accept-encoding');
    let cacheControl = false;
    for (const rule of this.st.rules) {
      if (!rule.glob.test(this.url)) continue;
      headers.push(rule.name, rule.value);
      cacheControl ||= rule.cacheControl;
    }
    if (!cacheControl && this.fingerprinted(path)) headers.push('cache-control', IMMUTABLE);
  }

  // Answers with the file found: status 200 (conditions and ranges apply) or 404 (an error
  // page).
  async sendFile(found, status) {
    const st = this.st;
    const variants = await this.variants(found);
    const available = new Set(Object.keys(variants));
    const coding = fields.chooseCoding(this.fields.acceptEncoding, available);
    const rep = representation(coding === 'identity' ? found.file : variants[coding], coding);
    const type = st.typeOf(found.path);
    const content = ['content-type', type, 'accept-ranges', 'bytes'];
    if (coding !== 'identity') content.push('content-encoding', coding);
    if (status === 200) {
      const v = { etag: rep.etag, mtime: rep.mtime, now: this.now };
      const pre = fields.evaluatePreconditions(this.fields, v);
      if (pre === 'failed') {
        this.closeAll();
        return st.simple(this.req, this.res, 412, 'Precondition Failed');
      }
      if (pre === 'not modified') {
        const headers = [];
        this.validatorFields(headers, rep, available.size > 0, found.path);
        return this.finish(304, headers, rep, []);
      }
      // Range is defined for GET only (RFC 9110 §14.2); a field sent twice is no range.
      let ranged = { result: 'ignore', ranges: [] };
      if (this.req.method === 'GET' && this.fields.range.length === 1 && fields.ifRangeAllows(this.fields.ifRange, v)) {
        ranged = fields.parseRange(this.fields.range[0], rep.size);
      }
      // Several ranges of a compressed variant would need the coding named in each part.
      if (ranged.result === 'satisfiable' && ranged.ranges.length > 1 && coding !== 'identity') ranged = { result: 'ignore' };
      if (ranged.result === 'unsatisfiable') {
        const headers = ['content-range', `bytes */${rep.size}`, 'accept-ranges', 'bytes'];
        this.validatorFields(headers, rep, available.size > 0, found.path);
        headers.push('content-length', '0');
        return this.finish(416, headers, rep, []);
      }
      if (ranged.result === 'satisfiable' && ranged.ranges.length > 1) {
        return this.sendMultipart(rep, type, ranged.ranges, available.size > 0, found.path);
      }
      if (ranged.result === 'satisfiable') {
        const [first, last] = ranged.ranges[0];
        const headers = content.concat('content-range', `bytes ${first}-${last}/${rep.size}`);
        this.validatorFields(headers, rep, available.size > 0, found.path);
        headers.push('content-length', String(last - first + 1));
        return this.finish(206, headers, rep, [[first, last]]);
      }
    }
    const headers = content;
    if (status === 200) this.validatorFields(headers, rep, available.size > 0, found.path);
    headers.push('content-length', String(rep.size));
    return this.finish(status, headers, rep, rep.size > 0 ? [[0, rep.size - 1]] : []);
  }

  // Sends the head, then rep's bytes in parts ([first, last] each; none for HEAD), each
  // after the text before it (multipart heads), then the tail; closes every descriptor.
  async finish(status, headers, rep, parts, before = [], tail = null) {
    const res = this.res;
    exchangeFor(this.req, res, '', null, this.st.server).writeHead(status, headers);
    if (this.req.method === 'HEAD') parts = [];
    try {
      for (let i = 0; i < parts.length; i++) {
        if (before[i]) res.write(before[i]);
        await pipeRange(rep.fd, parts[i][0], parts[i][1], res);
      }
      if (tail !== null && this.req.method !== 'HEAD') res.end(tail);
      else res.end();
    } catch {
      res.destroy();
    } finally {
      this.closeAll();
    }
  }

  // RFC 9110 §14.6: several ranges in one body, each with its own head.
  sendMultipart(rep, type, ranges, hasVariants, path) {
    const boundary = `up-${randomBytes(8).toString('hex')}`;
    const heads = ranges.map(([first, last]) =>
      `\r\n--${boundary}\r\ncontent-type: ${type}\r\ncontent-range: bytes ${first}-${last}/${rep.size}\r\n\r\n`);
    const tail = `\r\n--${boundary}--\r\n`;
    let total = Buffer.byteLength(tail);
    ranges.forEach(([first, last], i) => {
      total += Buffer.byteLength(heads[i]) + last - first + 1;
    });
    const headers = ['content-type', `multipart/byteranges; boundary=${boundary}`, 'accept-ranges', 'bytes'];
    this.validatorFields(headers, rep, hasVariants, path);
    headers.push('content-length', String(total));
    return this.finish(206, headers, rep, ranges, heads, tail);
  }

  // ---- directory listings

  // Answers with an HTML index of the directory at real. Returns false when it could not be
  // read (then the request is a miss).
  async sendListing(real) {
    let entries;
    try {
      entries = await readdir(real, { withFileTypes: true, encoding: 'buffer' });
    } catch {
      return false;
    }
    const items = [];
    let truncated = false;
    for (const dirent of entries) {
      const text = listable(dirent.name, this.st.dotfiles);
      if (text === null) continue;
      if (items.length === MAX_LISTING) {
        truncated = true;
        break;
      }
      let isDir = dirent.isDirectory();
      if (dirent.isSymbolicLink()) {
        try {
          isDir = (await stat(Buffer.concat([Buffer.from(`${real}/`), dirent.name]))).isDirectory();
        } catch {
          isDir = false;
        }
      }
      items.push({ bytes: dirent.name, text, isDir });
    }
    items.sort((a, b) => Buffer.compare(a.bytes, b.bytes));
    const title = htmlEscape(this.url);
    let html = `<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Index of ${title}</title></head>\n` +
      `<body><h1>Index of ${title}</h1>\n<ul>\n`;
    if (this.url.length > 1) html += '<li><a href="../">../</a></li>\n';
    for (const item of items) {
      const slash = item.isDir ? '/' : '';
      html += `<li><a href="${hrefOf(item.bytes)}${slash}">${htmlEscape(item.text)}${slash}</a></li>\n`;
    }
    html += '</ul>\n';
    if (truncated) html += '<p>More names are not shown.</p>\n';
    html += '</body></html>\n';
    this.closeAll();
    this.st.send(this.req, this.res, 200, ['content-type', 'text/html; charset=utf-8', 'cache-control', 'no-cache'], html);
    return true;
  }
}

// Writes bytes [first, last] of fd to res, waiting for each chunk to drain. Rejects when the
// file fails, ends early (it shrank: its content-length cannot be kept) or the client leaves.
function pipeRange(fd, first, last, res) {
  return new Promise((resolve, reject) => {
    const file = fs.createReadStream(null, { fd, start: first, end: last, autoClose: false });
    let got = 0;
    const gone = () => {
      file.destroy();
      reject(new Error('client gone'));
    };
    res.once('close', gone);
    file.on('data', (chunk) => {
      got += chunk.length;
    });
    file.on('error', (error) => {
      res.removeListener('close', gone);
      reject(error);
    });
    file.on('end', () => {
      res.removeListener('close', gone);
      if (got < last - first + 1) reject(new Error('the file shrank'));
      else resolve();
    });
    file.pipe(res, { end: false });
  });
}

module.exports = { StaticFiles, representation, requestFields, pipeRange };
