'use strict';
// Node's own HTTP/2 client for test/test_up_node_http2.rb: one session to the URL in
// argv[2] (https with the CA file in argv[3], or "-" for h2c), the requests in the JSON of
// argv[4] ([{ path, method, body }]) all sent at once on it, and one line of JSON out:
// { responses: [{ status, headers, informational: [headers...], body, rstCode, begunAtEnd }],
// goaway }, where begunAtEnd is how many responses had begun when this one ended. With
// argv[5] "stop-after-first-byte", it prints {"ready": true} once every response has begun
// and waits for the server's GOAWAY.

const fs = require('node:fs');
const http2 = require('node:http2');

const [url, caFile, requestsJson, mode] = process.argv.slice(2);
const requests = JSON.parse(requestsJson);
const session = http2.connect(url, caFile === '-' ? {} : { ca: fs.readFileSync(caFile) });
let goaway = null;
session.on('goaway', (code, lastStreamId) => {
  goaway = { code, lastStreamId };
});
session.on('error', (error) => {
  process.stdout.write(`${JSON.stringify({ error: error.message })}\n`);
  process.exit(1);
});
setTimeout(() => {
  process.stdout.write(`${JSON.stringify({ error: 'timed out' })}\n`);
  process.exit(1);
}, 10000).unref();

let begun = 0;
const responses = requests.map((request) => new Promise((resolve) => {
  const stream = session.request({ ':path': request.path, ':method': request.method || 'GET', ...(request.headers || {}) });
  const out = { status: null, headers: null, informational: [], body: '' };
  stream.on('headers', (headers) => out.informational.push(headers));
  stream.on('response', (headers) => {
    out.status = headers[':status'];
    out.headers = headers;
    if (++begun === requests.length && mode === 'stop-after-first-byte') process.stdout.write('{"ready":true}\n');
  });
  stream.setEncoding('utf8');
  stream.on('data', (chunk) => { out.body += chunk; });
  stream.on('close', () => {
    out.rstCode = stream.rstCode;
    out.begunAtEnd = begun;
    resolve(out);
  });
  stream.end(request.body);
}));

Promise.all(responses).then((all) => {
  process.stdout.write(`${JSON.stringify({ responses: all, goaway })}\n`);
  session.close();
});
