'use strict';
// A WebSocket client on the npm ws package, for test/test_websocket_deflate.rb: connects to
// argv[2] with permessage-deflate offered (ws's default), sends each argv[3..] as a text
// message, and prints one JSON line per message received and one for the close, then exits.
// Bounded: it gives up after 10 s.
const WebSocket = require('../../bench/node_modules/ws');

const [url, ...messages] = process.argv.slice(2);
const ws = new WebSocket(url, { perMessageDeflate: { threshold: 0 } });
const timer = setTimeout(() => { console.log(JSON.stringify({ timeout: true })); process.exit(2); }, 10000);
ws.on('upgrade', (res) => {
  console.log(JSON.stringify({ extensions: res.headers['sec-websocket-extensions'] || null }));
});
ws.on('open', () => { for (const m of messages) ws.send(m); });
ws.on('message', (data, isBinary) => {
  console.log(JSON.stringify({ message: data.toString(), binary: isBinary }));
  if (data.toString() === 'close me') ws.close(1000, 'bye');
});
ws.on('close', (code) => {
  console.log(JSON.stringify({ close: code }));
  clearTimeout(timer);
  process.exit(0);
});
ws.on('error', (e) => { console.log(JSON.stringify({ error: e.message })); process.exit(1); });
