'use strict';
// The request path of a static file, decoded and checked, by the rules of up_ruby's engine
// (ext/up/engine/handlers/static_path.h), so that both runtimes refuse the same paths: the one place
// where what a client sends becomes a name to open under a root directory. Pure: a string in,
// a result out.
//
// Percent-escapes are decoded once (RFC 3986 §2.1), never twice, and what the decoding yields
// is checked whole: a path is refused when it holds, decoded, a "." or ".." segment (RFC 3986
// §5.2.4), an empty segment ("//"), a backslash, a NUL or another control byte, an escaped
// '/' ("%2F"), bytes that are not UTF-8 (an overlong "%C0%AE" is not a '.'), a segment that
// starts with '.' (a dotfile) unless allowed, or more than MAX_PATH bytes.

// Longest decoded path, in bytes (UP_STATIC_MAX_PATH).
const MAX_PATH = 2048;

function hexValue(code) {
  if (code >= 0x30 && code <= 0x39) return code - 0x30;
  if (code >= 0x61 && code <= 0x66) return code - 0x61 + 10;
  if (code >= 0x41 && code <= 0x46) return code - 0x41 + 10;
  return -1;
}

// The reason the segment out[start, end) is refused, or null.
function checkSegment(out, start, end, dotfiles) {
  const n = end - start;
  if (n === 0) return 'empty segment';
  if (out[start] !== 0x2e) return null;
  if (n === 1 || (n === 2 && out[start + 1] === 0x2e)) return 'dot segment';
  return dotfiles ? null : 'dotfile';
}

// path: the request's path as sent (up to its '?'), a string of bytes (latin1). Returns
// { path, dir } (path: the decoded path without its leading '/', as UTF-8 text, '' for "/";
// dir: it ended with '/'), or { error } naming why it is refused.
function decodePath(path, dotfiles) {
  const len = path.length;
  if (len === 0 || path.charCodeAt(0) !== 0x2f) return { error: 'not absolute' };
  const out = Buffer.allocUnsafe(Math.min(len, MAX_PATH + 1));
  let n = 0;
  let seg = 0;
  let dir = false;
  for (let i = 1; i < len; i++) {
    let c = path.charCodeAt(i);
    if (c > 0xff) return { error: 'bad utf-8' }; // not a byte: Node gave us text
    if (c === 0x2f) {
      const error = checkSegment(out, seg, n, dotfiles);
      if (error) return { error };
      if (i + 1 === len) {
        dir = true;
        break;
      }
      if (n === MAX_PATH) return { error: 'too long' };
      out[n++] = 0x2f;
      seg = n;
      continue;
    }
    if (c === 0x25) {
      const hi = i + 2 < len ? hexValue(path.charCodeAt(i + 1)) : -1;
      const lo = hi >= 0 ? hexValue(path.charCodeAt(i + 2)) : -1;
      if (lo < 0) return { error: 'bad escape' };
      c = hi * 16 + lo;
      i += 2;
      if (c === 0x2f) return { error: 'encoded slash' };
    }
    if (c < 0x20 || c === 0x7f) return { error: 'control byte' };
    if (c === 0x5c) return { error: 'backslash' };
    if (n === MAX_PATH) return { error: 'too long' };
    out[n++] = c;
  }
  if (len === 1) {
    dir = true; // "/": the root
  } else if (!dir) {
    const error = checkSegment(out, seg, n, dotfiles);
    if (error) return { error };
  }
  const bytes = out.subarray(0, n);
  // Fatal decoding refuses overlong forms, surrogates and truncated sequences, as the engine's
  // utf8.c does.
  let text;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return { error: 'bad utf-8' };
  }
  return { path: text, dir };
}

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

module.exports = { decodePath, MAX_PATH };
