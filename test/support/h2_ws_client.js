'use strict';
// A WebSocket over HTTP/2 (RFC 8441), for test/test_up_node_http2.rb: Node's http2 client
// opens the stream with an extended CONNECT to argv[2] (http://HOST:PORT/PATH, h2c), offering
// the subprotocol argv[3] ("-" for none); the npm ws package frames it as a client does (it
// takes any Duplex); each argv[4..] is sent as a text message. Prints one JSON line for the
// answer, one per message received and one for the close, then exits. Gives up after 10 s.

const http2 = require('node:http2');
const { WebSocket } = require('../../node/node_modules/ws');

const [url, protocol, ...messages] = process.argv.slice(2);
const print = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);
setTimeout(() => {
  print({ timeout: true });
  process.exit(2);
}, 10000).unref();

const target = new URL(url);
const session = http2.connect(target.origin);
session.on('error', (error) => {
  print({ error: error.message });
  process.exit(1);
});
session.once('remoteSettings', (settings) => {
  print({ enableConnectProtocol: settings.enableConnectProtocol === true });
  const headers = { ':method': 'CONNECT', ':protocol': 'websocket', ':path': target.pathname, 'sec-websocket-version': '13' };
  if (protocol !== '-') headers['sec-websocket-protocol'] = protocol;
  const stream = session.request(headers);
  stream.on('response', (answer) => {
    print({ status: answer[':status'], protocol: answer['sec-websocket-protocol'] || null });
    if (answer[':status'] !== 200) return session.close();
    const ws = new WebSocket(null, undefined, { closeTimeout: 5000 });
    ws._isServer = false; // a client masks what it sends (RFC 6455 §5.3)
    ws.setSocket(stream, Buffer.alloc(0), { maxPayload: 0 });
    ws.on('message', (data) => {
      print({ message: data.toString() });
      if (data.toString() === messages[messages.length - 1]) ws.close(1000, 'bye');
    });
    ws.on('close', (code) => {
      print({ close: code });
      session.close();
    });
    for (const message of messages) ws.send(message);
  });
});
