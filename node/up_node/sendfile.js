'use strict';
// A file as the app's response on up_node, with the rules up_ruby's engine applies to it
// (ext/up/engine/handlers/file_response.h): an x-sendfile field (Rack::Sendfile sets it, as the env's
// sendfile.type says the server sends files), or a body with to_path. exchange.js calls
// sendFile with what the app said; the bytes come from the file by Node's fs streams.
//
// The app's status and fields count where they make sense. A status other than 200 is sent as
// it is, whole, without conditions or ranges. The app's content-type is the file's (and each
// part's of a multipart body); its etag and last-modified, when it gives them, are the
// validators; otherwise the file's, in the engine's etag format (static_files.js), so a file
// has one etag on every runtime. content-length, content-range, accept-ranges,
// transfer-encoding and x-sendfile are ours; a 304, 412 or 416 drops content-type and
// content-encoding; a 412 says why in a line of text (RFC 9110 §15.5), as nginx's does.
//
// The file is opened once and its size taken then: a file that shrinks while it is sent
// ends the connection rather than hanging it.

const fs = require('node:fs');
const { randomBytes } = require('node:crypto');
const { promisify } = require('node:util');
const fields = require('./static_fields');

const open = promisify(fs.open);
const fstat = promisify(fs.fstat);
const OPEN_FLAGS = fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY;
// An app's content-type or etag longer than this is not used (the field is still sent):
// no multipart body then, no condition on the tag (file_response.h's limits).
const MAX_TYPE = 256;
const MAX_ETAG = 256;
const PRECONDITION_FAILED = 'Precondition Failed\n';

// static_files.js requires exchange.js, which requires this file: its helpers are taken when
// first used, once every module is loaded.
function statics() {
  return require('./static_files');
}

// The first value of the field name (lower case) in a flat [name, value...] list, or null.
function appField(headers, name) {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i].length === name.length && headers[i].toLowerCase() === name) return headers[i + 1];
  }
  return null;
}

// Where the x-sendfile field is in a flat list, any case (a Rack 2 app spells it X-Sendfile,
// and the path must never reach the client), or -1.
function sendfileField(headers) {
  for (let i = 0; i < headers.length; i += 2) {
    if (headers[i].length === 10 && headers[i].toLowerCase() === 'x-sendfile') return i;
  }
  return -1;
}

// The regular file at path: { fd, stat } with its descriptor open. Rejects with an error
// whose code says why (EISDIR for a directory, EINVAL for a FIFO or a device).
async function openFile(path) {
  const fd = await open(path, OPEN_FLAGS);
  try {
    const stat = await fstat(fd, { bigint: true });
    if (stat.isFile()) return { fd, stat };
    const error = new Error(stat.isDirectory() ? 'Is a directory' : 'Not a regular file');
    error.code = stat.isDirectory() ? 'EISDIR' : 'EINVAL';
    throw error;
  } catch (error) {
    fs.close(fd, () => {});
    throw error;
  }
}

// What to send: { status, body: 'none' | 'whole' | 'range' | 'multipart', ranges, appOk,
// ownEtag, ownDate, type } from the request, the app's status and fields, and the file.
function plan(req, status, headers, rep, now) {
  const type = appField(headers, 'content-type');
  const etag = appField(headers, 'etag');
  const date = appField(headers, 'last-modified');
  const encoding = appField(headers, 'content-encoding');
  const p = {
    status, body: 'whole', ranges: null, appOk: status === 200, ownEtag: etag === null, ownDate: date === null,
    type: type !== null && Buffer.byteLength(type, 'latin1') <= MAX_TYPE ? type : null,
  };
  if (!p.appOk) return p;
  const v = { etag: etag === null ? rep.etag : etag, mtime: rep.mtime, now };
  if (date !== null) {
    const t = fields.parseDate(date, now);
    if (t !== null) v.mtime = t;
  }
  const f = statics().requestFields(req);
  if (etag !== null && etag.length > MAX_ETAG) {
    // No tag to compare with: the tag conditions are left out rather than guessed.
    f.ifMatch = [];
    f.ifNoneMatch = [];
    f.ifRange = [];
    v.etag = '';
  }
  const pre = fields.evaluatePreconditions(f, v);
  if (pre !== 'send') {
    p.status = pre === 'failed' ? 412 : 304;
    p.body = 'none';
    return p;
  }
  // Range is defined for GET only (RFC 9110 §14.2); a field sent twice is no range.
  let ranged = { result: 'ignore', ranges: [] };
  if (req.method === 'GET' && f.range.length === 1 && fields.ifRangeAllows(f.ifRange, v)) {
    ranged = fields.parseRange(f.range[0], rep.size);
  }
  // Several ranges of a coded body would need the coding named in each part, and a part
  // cannot name a type too long to keep: the whole body instead.
  if (ranged.result === 'satisfiable' && ranged.ranges.length > 1 && (encoding !== null || (type !== null && p.type === null))) {
    ranged = { result: 'ignore', ranges: [] };
  }
  if (ranged.result === 'unsatisfiable') {
    p.status = 416;
    p.body = 'none';
  } else if (ranged.result === 'satisfiable') {
    p.status = 206;
    p.body = ranged.ranges.length > 1 ? 'multipart' : 'range';
    p.ranges = ranged.ranges;
  }
  return p;
}

// Whether the app's field name goes out with the plan's status (up_file_response_keeps).
function keeps(p, name) {
  const n = name.toLowerCase();
  if (n === 'content-length' || n === 'x-sendfile' || n === 'transfer-encoding' || n === 'content-range') return false;
  if (p.appOk && n === 'accept-ranges') return false;
  if (p.body === 'none' && (n === 'content-type' || n === 'content-encoding')) return false;
  if (p.body === 'multipart' && n === 'content-type') return false;
  return true;
}

// The head's fields and the body's parts: { headers, parts: [[first, last]...], before,
// tail, text }.
function layout(p, appHeaders, rep) {
  const headers = [];
  for (let i = 0; i < appHeaders.length; i += 2) {
    if (keeps(p, appHeaders[i])) headers.push(appHeaders[i], appHeaders[i + 1]);
  }
  if (p.appOk && p.status !== 412) {
    if (p.ownEtag) headers.push('etag', rep.etag);
    if (p.ownDate) headers.push('last-modified', rep.lastModified);
    if (p.status !== 304) headers.push('accept-ranges', 'bytes');
  }
  const out = { headers, parts: [], before: [], tail: null, text: null };
  if (p.status === 412) {
    headers.push('content-type', 'text/plain; charset=utf-8', 'content-length', String(PRECONDITION_FAILED.length));
    out.text = PRECONDITION_FAILED;
  } else if (p.status === 416) {
    headers.push('content-range', `bytes */${rep.size}`, 'content-length', '0');
  } else if (p.body === 'whole') {
    headers.push('content-length', String(rep.size));
    if (rep.size > 0) out.parts.push([0, rep.size - 1]);
  } else if (p.body === 'range') {
    const [first, last] = p.ranges[0];
    headers.push('content-range', `bytes ${first}-${last}/${rep.size}`, 'content-length', String(last - first + 1));
    out.parts.push([first, last]);
  } else if (p.body === 'multipart') {
    // RFC 9110 §14.6: each range with its own head, then the closing delimiter.
    const boundary = `up-${randomBytes(8).toString('hex')}`;
    const type = p.type === null ? 'application/octet-stream' : p.type;
    out.before = p.ranges.map(([first, last]) =>
      `\r\n--${boundary}\r\ncontent-type: ${type}\r\ncontent-range: bytes ${first}-${last}/${rep.size}\r\n\r\n`);
    out.tail = `\r\n--${boundary}--\r\n`;
    let total = Buffer.byteLength(out.tail, 'latin1');
    p.ranges.forEach(([first, last], i) => {
      total += Buffer.byteLength(out.before[i], 'latin1') + last - first + 1;
    });
    headers.push('content-type', `multipart/byteranges; boundary=${boundary}`, 'content-length', String(total));
    out.parts = p.ranges;
  }
  return out;
}

// The x-sendfile path cannot be opened: the app's mistake, logged, and answered 404 when
// there is no such file, 500 otherwise, as up_ruby answers it.
function refusePath(exchange, path, error) {
  const log = exchange.server.log;
  if (log) log.line(`invalid response: x-sendfile "${path}": ${error.code || error.message}`);
  const missing = error.code === 'ENOENT' || error.code === 'ENOTDIR';
  const body = missing ? 'Not Found\n' : 'Internal Server Error\n';
  exchange.writeHead(missing ? 404 : 500, ['content-type', 'text/plain; charset=utf-8', 'content-length', String(body.length)]);
  exchange.res.end(exchange.req.method === 'HEAD' ? undefined : body);
}

// Sends the file at path as the response with the app's status and flat fields. fromField:
// the path came from x-sendfile (a path that cannot be opened is then answered here); else a
// to_path body, whose file gone since the Ruby side saw it is a 500. done(): the Ruby side's
// close, once the response is out or failed.
async function sendFile(exchange, status, appHeaders, path, fromField, done) {
  const { req, res } = exchange;
  let file = null;
  try {
    try {
      file = await openFile(path);
    } catch (error) {
      if (fromField) refusePath(exchange, path, error);
      else exchange.fail();
      return;
    }
    const rep = statics().representation({ fd: file.fd, stat: file.stat }, 'identity');
    const p = plan(req, status, appHeaders, rep, Math.floor(Date.now() / 1000));
    const out = layout(p, appHeaders, rep);
    exchange.writeHead(p.status, out.headers);
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    if (out.text !== null) {
      res.end(out.text);
      return;
    }
    for (let i = 0; i < out.parts.length; i++) {
      if (out.before[i]) res.write(out.before[i], 'latin1');
      await statics().pipeRange(file.fd, out.parts[i][0], out.parts[i][1], res);
    }
    if (out.tail !== null) res.end(out.tail, 'latin1');
    else res.end();
  } catch {
    // The file failed mid-way or the client left: the connection ends (a partial body must
    // not pass for a whole one), or a 500 when nothing went out yet.
    if (res.headersSent) res.destroy();
    else exchange.fail();
  } finally {
    if (file !== null) fs.close(file.fd, () => {});
    done();
  }
}

module.exports = { sendFile, sendfileField };
