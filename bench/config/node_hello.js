// The limit row for up_node: Node's own http module answering "Hello World", no Opal, no Rack.
// bench/run starts `node bench/config/node_hello.js PORT WORKERS`; more than one worker runs
// under node:cluster, as up_node does.
'use strict';

const cluster = require('node:cluster');
const http = require('node:http');

const [port, workers] = process.argv.slice(2).map(Number);

if (workers > 1 && cluster.isPrimary) {
  for (let i = 0; i < workers; i++) cluster.fork();
} else {
  http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 11 });
    res.end('Hello World');
  }).listen(port, '127.0.0.1');
}
