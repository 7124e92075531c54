'use strict';
// The Node rows of bench/run's WebSocket tables: the npm ws package (bench/package.json) on
// Node's http server, doing what test/rackup/ws_echo.ru and ws_broadcast.ru do through the
// upgrade API: the limit for up_node, which runs on the same two modules.
//   node bench/config/ws_node.js PORT ws_echo|ws_broadcast
// ws_echo: every message goes back to its sender. ws_broadcast: a connection to /publish
// sends each of its messages to every other connection, each of which subscribes on opening.
// Listens on 127.0.0.1 only. No permessage-deflate (off by default in ws, as in ws_load).

const http = require('node:http');
const { WebSocketServer } = require('ws');

const [port, app] = process.argv.slice(2);
if (!port || !['ws_echo', 'ws_broadcast'].includes(app)) {
  console.error('usage: node ws_node.js PORT ws_echo|ws_broadcast');
  process.exit(2);
}

const server = http.createServer((_req, res) => {
  res.writeHead(426, { 'content-type': 'text/plain', upgrade: 'websocket' });
  res.end('WebSocket only\n');
});
const wss = new WebSocketServer({ server });
const subscribers = new Set();

function echo(ws) {
  ws.on('message', (data, isBinary) => ws.send(data, { binary: isBinary }));
}

function publisher(ws) {
  ws.on('message', (data, isBinary) => {
    for (const subscriber of subscribers) subscriber.send(data, { binary: isBinary });
  });
}

function subscriber(ws) {
  subscribers.add(ws);
  ws.on('close', () => subscribers.delete(ws));
}

wss.on('connection', (ws, req) => {
  if (app === 'ws_echo') echo(ws);
  else if (req.url === '/publish') publisher(ws);
  else subscriber(ws);
});

// Port 0 takes a free one; the line says which (test/test_ws_load.rb waits for it).
server.listen(Number(port), '127.0.0.1', () => {
  console.log(`ws_node: ${app} listening on 127.0.0.1:${server.address().port}`);
});
