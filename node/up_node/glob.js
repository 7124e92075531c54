'use strict';
// Channel patterns of pub/sub (docs/websockets.md: `match: :glob`) with Redis'
// PSUBSCRIBE rules, as up_ruby's engine matches them (up_glob_match in
// ext/up/engine/pubsub/pubsub.c): `*` any run of bytes, `?` one byte, `[...]` a class (`^` negates,
// `a-z` a range, a reversed range taken as it is written the other way round, `\` escapes),
// `\x` the byte x; a class without its closing `]` runs to the end of the pattern. It works
// on the UTF-8 bytes of both, so `?` is one byte of a multi-byte character there too.
// pubsub.js calls match() for each pattern subscription on every publish.

// Whether byte c is in the class that starts at p (just after '['); returns [matched, the
// index just past its ']'].
function inClass(pattern, p, c) {
  const end = pattern.length;
  const negate = p < end && pattern[p] === 0x5e; // '^'
  if (negate) p++;
  let matched = false;
  while (p < end && pattern[p] !== 0x5d) { // ']'
    if (pattern[p] === 0x5c && p + 1 < end) { // '\'
      matched = matched || pattern[p + 1] === c;
      p += 2;
    } else if (p + 2 < end && pattern[p + 1] === 0x2d && pattern[p + 2] !== 0x5d) { // 'a-z'
      const lo = Math.min(pattern[p], pattern[p + 2]);
      const hi = Math.max(pattern[p], pattern[p + 2]);
      matched = matched || (c >= lo && c <= hi);
      p += 3;
    } else {
      matched = matched || pattern[p] === c;
      p++;
    }
  }
  return [negate ? !matched : matched, p < end ? p + 1 : p];
}

// pattern, string: Buffers (UTF-8). Iterative with one backtrack point, the last star, so it
// is linear in pattern x string at worst (a recursive matcher is exponential on "*a*a*a...b").
function match(pattern, string) {
  const pend = pattern.length;
  const send = string.length;
  let p = 0;
  let s = 0;
  let star = -1;
  let starS = -1;
  while (s < send) {
    if (p < pend && pattern[p] === 0x2a) { // '*'
      while (p < pend && pattern[p] === 0x2a) p++;
      if (p === pend) return true;
      star = p;
      starS = s;
      continue;
    }
    if (p < pend) {
      let next = p + 1;
      let ok;
      const c = pattern[p];
      if (c === 0x3f) { // '?'
        ok = true;
      } else if (c === 0x5b) { // '['
        [ok, next] = inClass(pattern, p + 1, string[s]);
      } else if (c === 0x5c && p + 1 < pend) {
        ok = pattern[p + 1] === string[s];
        next = p + 2;
      } else {
        ok = c === string[s];
      }
      if (ok) {
        p = next;
        s++;
        continue;
      }
    }
    if (star < 0) return false;
    p = star;
    s = ++starS;
  }
  while (p < pend && pattern[p] === 0x2a) p++;
  return p === pend;
}

module.exports = { match };
