'use strict';
// The request fields a static file answer depends on, read by the rules of up_ruby's engine
// so that both runtimes answer alike: Range (ext/up/engine/handlers/range.c), the conditional fields
// (precondition.c), HTTP dates (date.c) and Accept-Encoding (content_coding.c). Pure
// functions over field values (latin1 strings); static_files.js calls them.

// A range set holds at most this many ranges (UP_RANGE_MAX); more is no range at all.
const RANGE_MAX = 16;
// A list field sent on more lines than this is ignored (UP_PRECONDITION_MAX_LINES).
const MAX_LINES = 4;
const INT64_LIMIT = (2n ** 63n - 1n - 9n) / 10n;

// ---------------------------------------------------------------- Range (RFC 9110 §14.1)

function skipOws(s, i) {
  while (i < s.length && (s[i] === ' ' || s[i] === '\t')) i++;
  return i;
}

function isDigit(ch) {
  return ch >= '0' && ch <= '9';
}

// 1*DIGIT at s[i] that fits in 63 bits: [digits read, value]; 0 digits for none or too many.
function readPos(s, i) {
  let n = 0n;
  let k = i;
  while (k < s.length && isDigit(s[k])) {
    if (n > INT64_LIMIT) return [0, 0n];
    n = n * 10n + BigInt(s.charCodeAt(k) - 48);
    k++;
  }
  return [k - i, n];
}

// Returns { result: 'ignore' | 'unsatisfiable' | 'satisfiable', ranges: [[first, last]...] }
// for a representation of size bytes. Overlapping ranges, more than RANGE_MAX, a unit other
// than bytes or bad syntax: ignore (the whole representation is sent).
function parseRange(value, size) {
  const ignore = { result: 'ignore', ranges: [] };
  if (value.length < 6 || value.slice(0, 6).toLowerCase() !== 'bytes=') return ignore;
  const total = BigInt(size);
  const ranges = [];
  let i = 6;
  let specs = 0;
  let elements = 0;
  for (;;) {
    // Empty list elements around commas are allowed (RFC 9110 §5.6.1.2).
    i = skipOws(value, i);
    if (i < value.length && value[i] === ',') {
      i++;
      continue;
    }
    if (i === value.length) break;
    if (++elements > RANGE_MAX) return ignore;
    let [n, first] = readPos(value, i);
    const hasFirst = n > 0;
    if (hasFirst) i += n;
    else if (i < value.length && isDigit(value[i])) return ignore;
    if (i === value.length || value[i] !== '-') return ignore;
    i++;
    let last;
    [n, last] = readPos(value, i);
    const hasLast = n > 0;
    if (hasLast) i += n;
    else if (i < value.length && isDigit(value[i])) return ignore;
    i = skipOws(value, i);
    if (i < value.length && value[i] !== ',') return ignore;
    if (!hasFirst && !hasLast) return ignore;
    if (hasFirst && hasLast && last < first) return ignore; // an invalid int-range (§14.1.1)
    specs++;
    let range;
    if (!hasFirst) {
      // A suffix: the last N bytes; of an empty representation, or N = 0, none.
      if (last === 0n || total === 0n) continue;
      range = [last >= total ? 0n : total - last, total - 1n];
    } else {
      if (first >= total) continue; // unsatisfiable: dropped
      range = [first, !hasLast || last >= total ? total - 1n : last];
    }
    if (ranges.some((r) => r[0] <= range[1] && range[0] <= r[1])) return ignore;
    ranges.push(range);
  }
  if (specs === 0) return ignore;
  if (ranges.length === 0) return { result: 'unsatisfiable', ranges };
  return { result: 'satisfiable', ranges: ranges.map(([a, b]) => [Number(a), Number(b)]) };
}

// ---------------------------------------------------------------- dates (RFC 9110 §5.6.7)

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const LONG_DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function digits(s, at, n) {
  let v = 0;
  for (let i = at; i < at + n; i++) {
    if (!isDigit(s[i])) return -1;
    v = v * 10 + s.charCodeAt(i) - 48;
  }
  return v;
}

// "HH:MM:SS" at s[at] in seconds of the day, or -1; a leap second counts as the one before.
function timeOfDay(s, at) {
  if (s[at + 2] !== ':' || s[at + 5] !== ':') return -1;
  const h = digits(s, at, 2);
  const m = digits(s, at + 3, 2);
  const sec = digits(s, at + 6, 2);
  if (h < 0 || m < 0 || sec < 0 || h > 23 || m > 59 || sec > 60) return -1;
  return h * 3600 + m * 60 + (sec === 60 ? 59 : sec);
}

function isLeap(y) {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

// Seconds since the epoch, or null.
function makeTime(y, month, d, secs) {
  if (month < 1 || d < 1 || secs < 0) return null;
  if (d > MONTH_DAYS[month - 1] + (month === 2 && isLeap(y) ? 1 : 0)) return null;
  return Date.UTC(y, month - 1, d) / 1000 + secs;
}

function monthOf(s, at) {
  return MONTHS.indexOf(s.slice(at, at + 3)) + 1;
}

function dayNameOf(s) {
  return DAYS.includes(s.slice(0, 3));
}

// An HTTP date (IMF-fixdate, rfc850 or asctime) in seconds since the epoch, or null. now: the
// current second, which places an rfc850 date's two-digit year.
function parseDate(s, now) {
  if (s.length === 29) {
    // "Sun, 06 Nov 1994 08:49:37 GMT"
    if (!dayNameOf(s) || s.slice(3, 5) !== ', ' || s[7] !== ' ' || s[11] !== ' ' || s[16] !== ' ' || s.slice(25) !== ' GMT') return null;
    const d = digits(s, 5, 2);
    const y = digits(s, 12, 4);
    if (d < 0 || y < 0) return null;
    return makeTime(y, monthOf(s, 8), d, timeOfDay(s, 17));
  }
  if (s.length === 24) {
    // "Sun Nov  6 08:49:37 1994"
    if (!dayNameOf(s) || s[3] !== ' ' || s[7] !== ' ' || s[10] !== ' ' || s[19] !== ' ') return null;
    const d = s[8] === ' ' ? digits(s, 9, 1) : digits(s, 8, 2);
    const y = digits(s, 20, 4);
    if (d < 0 || y < 0) return null;
    return makeTime(y, monthOf(s, 4), d, timeOfDay(s, 11));
  }
  if (s.length >= 30 && s.length <= 33) {
    // "Sunday, 06-Nov-94 08:49:37 GMT"
    const name = LONG_DAYS.find((day) => s.length > day.length && s.startsWith(day));
    if (!name || s.length !== name.length + 24) return null;
    const r = s.slice(name.length);
    if (r.slice(0, 2) !== ', ' || r[4] !== '-' || r[8] !== '-' || r[11] !== ' ' || r.slice(20) !== ' GMT') return null;
    const d = digits(r, 2, 2);
    const yy = digits(r, 9, 2);
    if (d < 0 || yy < 0) return null;
    const thisYear = new Date(now * 1000).getUTCFullYear();
    let y = thisYear - (thisYear % 100) + yy;
    if (y > thisYear + 50) y -= 100;
    return makeTime(y, monthOf(r, 5), d, timeOfDay(r, 12));
  }
  return null;
}

// ---------------------------------------------------------------- conditionals (RFC 9110 §13)

// etagc = %x21 / %x23-7E / obs-text (RFC 9110 §8.8.3)
function isEtagc(code) {
  return code === 0x21 || (code >= 0x23 && code !== 0x7f);
}

function tagMatches(tag, etag, weak) {
  if (tag.startsWith('W/')) {
    if (!weak) return false;
    tag = tag.slice(2);
  }
  return tag === etag;
}

// Whether the entity-tag list value names etag (a strong tag): 1, 0, or -1 when malformed.
// "*" matches any. weak: the weak comparison (If-None-Match) rather than the strong one.
function etagListMatch(value, etag, weak) {
  let i = skipOws(value, 0);
  let end = value.length;
  while (end > i && (value[end - 1] === ' ' || value[end - 1] === '\t')) end--;
  if (end - i === 1 && value[i] === '*') return 1;
  let matched = 0;
  let tags = 0;
  while (i < end) {
    if (value[i] === ',') {
      i = skipOws(value.slice(0, end), i + 1);
      continue;
    }
    const start = i;
    if (end - i >= 2 && value[i] === 'W' && value[i + 1] === '/') i += 2;
    if (i === end || value[i] !== '"') return -1;
    i++;
    while (i < end && value[i] !== '"') {
      if (!isEtagc(value.charCodeAt(i))) return -1;
      i++;
    }
    if (i === end) return -1;
    i++;
    tags++;
    if (tagMatches(value.slice(start, i), etag, weak)) matched = 1;
    i = skipOws(value.slice(0, end), i);
    if (i < end && value[i] !== ',') return -1;
  }
  return tags > 0 ? matched : -1;
}

function linesMatch(lines, etag, weak) {
  if (lines.length === 0 || lines.length > MAX_LINES) return -1;
  let matched = 0;
  for (const line of lines) {
    const r = etagListMatch(line, etag, weak);
    if (r < 0) return -1;
    matched |= r;
  }
  return matched;
}

function singleDate(lines, now) {
  return lines.length === 1 ? parseDate(lines[0], now) : null;
}

// RFC 9110 §13.2.2's order. fields: { ifMatch, ifNoneMatch, ifModifiedSince,
// ifUnmodifiedSince } (arrays of lines); v: { etag, mtime (seconds), now }. Returns 'send',
// 'not modified' (304) or 'failed' (412).
function evaluatePreconditions(fields, v) {
  const m = linesMatch(fields.ifMatch, v.etag, false);
  if (m === 0) return 'failed';
  if (fields.ifMatch.length === 0) {
    const date = singleDate(fields.ifUnmodifiedSince, v.now);
    if (date !== null && v.mtime > date) return 'failed';
  }
  if (linesMatch(fields.ifNoneMatch, v.etag, true) === 1) return 'not modified';
  if (fields.ifNoneMatch.length === 0) {
    const date = singleDate(fields.ifModifiedSince, v.now);
    if (date !== null && v.mtime <= date) return 'not modified';
  }
  return 'send';
}

// RFC 9110 §13.1.5: whether a Range applies. An entity tag compares strongly; a date must be
// the representation's exact one, and a strong validator (a second older than now).
function ifRangeAllows(lines, v) {
  if (lines.length === 0) return true;
  if (lines.length > 1) return false;
  const s = lines[0];
  if (s.startsWith('"') || s.startsWith('W/')) {
    if (s.length < 2 || s[0] !== '"' || s[s.length - 1] !== '"') return false;
    for (let i = 1; i + 1 < s.length; i++) {
      if (!isEtagc(s.charCodeAt(i))) return false;
    }
    return s === v.etag;
  }
  const date = parseDate(s, v.now);
  return date !== null && date === v.mtime && v.mtime < v.now;
}

// ---------------------------------------------------------------- Accept-Encoding (§12.5.3)

// The variants in order of preference: at equal weights, the earlier wins.
const CODINGS = ['br', 'zstd', 'gzip'];
const TCHAR = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]$/;

function slotOf(name) {
  const lower = name.toLowerCase();
  if (lower === 'x-gzip') return 'gzip';
  if (CODINGS.includes(lower) || lower === 'identity' || lower === '*') return lower;
  return null;
}

// qvalue (RFC 9110 §12.4.2) in thousandths, or -1.
function parseQvalue(s) {
  if (s.length === 0 || (s[0] !== '0' && s[0] !== '1')) return -1;
  let q = (s.charCodeAt(0) - 48) * 1000;
  if (s.length === 1) return q;
  if (s[1] !== '.' || s.length > 5) return -1;
  let scale = 100;
  for (let i = 2; i < s.length; i++, scale /= 10) {
    if (!isDigit(s[i]) || (q === 1000 && s[i] !== '0')) return -1;
    q += (s.charCodeAt(i) - 48) * scale;
  }
  return q;
}

function readCodings(s, q) {
  let i = 0;
  while (i < s.length) {
    i = skipOws(s, i);
    const start = i;
    while (i < s.length && TCHAR.test(s[i])) i++;
    const slot = slotOf(s.slice(start, i));
    let weight = 1000;
    let ok = i > start;
    i = skipOws(s, i);
    if (ok && i < s.length && s[i] === ';') {
      i = skipOws(s, i + 1);
      if (s.length - i >= 2 && (s[i] === 'q' || s[i] === 'Q') && s[i + 1] === '=') {
        const v = i + 2;
        i = v;
        while (i < s.length && s[i] !== ',' && s[i] !== ' ' && s[i] !== '\t') i++;
        weight = parseQvalue(s.slice(v, i));
        ok = weight >= 0;
        i = skipOws(s, i);
      } else {
        ok = false;
      }
    }
    if (i < s.length && s[i] !== ',') ok = false;
    while (i < s.length && s[i] !== ',') i++; // what did not parse is skipped to the comma
    if (i < s.length) i++;
    if (ok && slot !== null) q[slot] = weight;
  }
}

// The coding to send ('br', 'zstd', 'gzip' or 'identity') among available (a Set of codings
// with a variant), by the Accept-Encoding lines: the highest weight wins; "*" weighs the
// codings not named; identity goes when it outweighs the best.
function chooseCoding(lines, available) {
  if (lines.length === 0 || lines.length > MAX_LINES || available.size === 0) return 'identity';
  const q = {};
  for (const line of lines) readCodings(line, q);
  let best = 'identity';
  let bestQ = 0;
  for (const coding of CODINGS) {
    if (!available.has(coding)) continue;
    const w = q[coding] !== undefined ? q[coding] : q['*'] !== undefined ? q['*'] : 0;
    if (w > bestQ) {
      best = coding;
      bestQ = w;
    }
  }
  if (best !== 'identity' && q.identity !== undefined && q.identity > bestQ) return 'identity';
  return best;
}

module.exports = { parseRange, parseDate, evaluatePreconditions, ifRangeAllows, chooseCoding, CODINGS };
