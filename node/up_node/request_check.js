'use strict';
// Refusals up_ruby's engine makes that Node's parser (llhttp) lets through, decided on what
// Node parsed: the version, the target's form, Host and Transfer-Encoding. server.js calls
// check() before a request reaches the app. What Node does not keep (the raw request line)
// cannot be checked here: docs/opal.md lists those requests.

// RFC 3986 §3.2.2: an IP literal in brackets, or a reg-name (no "@", no space); then digits.
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]*)(?::[0-9]*)?$/;

// The status to refuse req with, or 0 to serve it.
function check(req) {
  // RFC 9110 §15.6.6: a major version we do not speak.
  if (req.httpVersionMajor !== 1) return 505;
  // RFC 9112 §3.2: no fragment in a target; the asterisk form is for OPTIONS only.
  if (req.url.includes('#')) return 400;
  if (req.url === '*' && req.method !== 'OPTIONS') return 400;

  let host = null;
  let hosts = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    if (raw[i].length === 4 && raw[i].toLowerCase() === 'host') {
      hosts += 1;
      host = raw[i + 1];
    }
  }
  // RFC 9112 §3.2: exactly one valid Host (none is allowed in HTTP/1.0).
  if (hosts > 1 || (host !== null && !HOST.test(host))) return 400;
  if (hosts === 0 && req.httpVersionMinor === 1) return 400;

  const te = req.headers['transfer-encoding'];
  if (te !== undefined) {
    // RFC 9112 §6.1: no Transfer-Encoding in HTTP/1.0.
    if (req.httpVersionMinor === 0) return 400;
    // "identity" is no coding any more and chunked takes no parameters: malformed. Node
    // takes "gzip, chunked" and hands on gzip'd bytes; chunked is the only coding we decode,
    // so others are not implemented (RFC 9112 §6.1, §7).
    const codings = te.split(',').map((coding) => coding.trim().toLowerCase());
    if (codings.some((coding) => coding === 'identity' || (coding !== 'chunked' && coding.startsWith('chunked')))) return 400;
    if (codings.some((coding) => coding !== 'chunked')) return 501;
  }
  return 0;
}

module.exports = { check };
