'use strict';
// The npm ws client (bench/node_modules, installed by bin/setup --test) against a UP! server,
// for test/test_websocket_interop.rb: each scenario is played by a real, independent client
// and what the client saw is printed as one JSON line, {"scenario": NAME, ...}; the Ruby test
// asserts on those lines. This script judges nothing itself.
//   node test/support/ws_interop.js PORT all       every scenario, at once, then {"done": true}
//   node test/support/ws_interop.js PORT stop      one connection that prints {"open": true},
//                                                  then how the server's stop closed it
// Each scenario runs twice, with and without ws's permessage-deflate offer, as "NAME" and
// "NAME+deflate"; "extensions" names what the server agreed to (ws.extensions, "" for none).
// Every scenario has a deadline, so a server that stops answering fails it with a
// {"error": "timeout"} line instead of hanging the test.

const path = require('node:path');
const crypto = require('node:crypto');
const WebSocket = require(require.resolve('ws', { paths: [path.join(__dirname, '..', '..', 'bench')] }));

const [port, mode] = process.argv.slice(2);
const DEADLINE_MS = 8000;
const MAX_MSG = 1024 * 1024; // the max_msg the Ruby test starts the server with

function report(fields) {
  process.stdout.write(JSON.stringify(fields) + '\n');
}

function connect(urlPath, options = {}, protocols = undefined) {
  return new WebSocket(`ws://127.0.0.1:${port}${urlPath}`, protocols, options);
}

// Resolves with what ws reports when the connection ends (or fails to open).
function closed(ws) {
  return new Promise((resolve) => {
    let error = null;
    ws.on('error', (e) => { error = e.message; });
    ws.on('close', (code, reason) => resolve({ code, reason: reason.toString(), error }));
  });
}

function opened(ws) {
  return new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
}

// The next message; rejected when the connection closes first, with the code that closed it.
function nextMessage(ws) {
  return new Promise((resolve, reject) => {
    const onClose = (code, reason) => reject(new Error(`closed with ${code} ${reason} instead of a message`));
    ws.once('close', onClose);
    ws.once('message', (data, isBinary) => {
      ws.off('close', onClose);
      resolve({ data, isBinary });
    });
  });
}

function sha(buffer) {
  return crypto.createHash('sha256').update(buffer).digest('hex');
}

// Sends message, returns what came back: its text (or hash when binary or long) and kind.
async function roundTrip(ws, message, sendOptions = {}) {
  const answer = nextMessage(ws);
  ws.send(message, sendOptions);
  const { data, isBinary } = await answer;
  return { binary: isBinary, bytes: data.length, sha: sha(data), text: isBinary || data.length > 200 ? null : data.toString() };
}

const scenarios = {
  async text_echo(options) {
    const ws = connect('/echo', options);
    await opened(ws);
    const answer = await roundTrip(ws, 'héllo wörld ✓ κόσμε');
    ws.close(1000);
    return { ...answer, close: await closed(ws), extensions: ws.extensions };
  },

  async binary_echo(options) {
    const ws = connect('/echo', options);
    await opened(ws);
    const payload = crypto.randomBytes(4096);
    const answer = await roundTrip(ws, payload);
    ws.close(1000);
    return { ...answer, sent_sha: sha(payload), close: await closed(ws), extensions: ws.extensions };
  },

  // The largest messages the server takes: text of max_msg bytes, and random bytes 16 KiB
  // short of it (random bytes do not compress: deflated, they grow by a few bytes per block,
  // and the compressed frame too must fit in max_msg).
  async large_echo(options) {
    const ws = connect('/echo', options);
    await opened(ws);
    const payload = crypto.randomBytes(MAX_MSG - 16384);
    const binary = await roundTrip(ws, payload);
    const text = 'ü'.repeat(MAX_MSG / 2);
    const textAnswer = await roundTrip(ws, text);
    ws.close(1000);
    return { binary, sent_sha: sha(payload), text: textAnswer, sent_text_sha: sha(Buffer.from(text)), close: await closed(ws),
             extensions: ws.extensions };
  },

  // One text message in four frames (FIN on the last), a character cut between two of them.
  async fragmented_echo(options) {
    const ws = connect('/echo', options);
    await opened(ws);
    const whole = Buffer.from('fragments: κόσμε, joined');
    const answer = nextMessage(ws);
    const cuts = [0, 5, 13, 20, whole.length];
    for (let i = 0; i < 4; i++) {
      ws.send(whole.subarray(cuts[i], cuts[i + 1]), { binary: false, fin: i === 3 });
    }
    const { data, isBinary } = await answer;
    ws.close(1000);
    return { binary: isBinary, text: data.toString(), close: await closed(ws), extensions: ws.extensions };
  },

  async client_ping(options) {
    const ws = connect('/echo', options);
    await opened(ws);
    const pong = new Promise((resolve) => ws.once('pong', (data) => resolve(data.toString())));
    ws.ping('are you there?');
    const payload = await pong;
    ws.close(1000);
    return { pong: payload, close: await closed(ws) };
  },

  // The app sets a ping interval of a second; ws answers the server's ping by itself, and the
  // connection goes on.
  async server_ping(options) {
    const ws = connect('/ping', options);
    await opened(ws);
    const ping = await new Promise((resolve) => ws.once('ping', (data) => resolve(data.toString())));
    const answer = await roundTrip(ws, 'still here');
    ws.close(1000);
    return { ping, answer: answer.text, close: await closed(ws) };
  },

  // The client closes with each code: the server's Close answers with the same one. A close()
  // without a code sends an empty Close, answered by an empty one: ws reports 1005.
  async client_close_codes(options) {
    const result = {};
    for (const code of [1000, 1001, 1003, 1008, 3000, 4000, 4999, null]) {
      const ws = connect('/echo', options);
      await opened(ws);
      if (code === null) ws.close(); else ws.close(code, 'bye');
      result[code === null ? 'none' : String(code)] = (await closed(ws)).code;
    }
    return { codes: result };
  },

  // The app writes, then closes: the client gets the message, then a Close 1000.
  async server_close(options) {
    const ws = connect('/close', options);
    await opened(ws);
    const message = nextMessage(ws);
    const end = closed(ws);
    ws.send('close');
    const { data } = await message;
    return { message: data.toString(), close: await end };
  },

  // Text that is not UTF-8 (ws does not check what it sends): the server fails with 1007.
  async invalid_utf8(options) {
    const ws = connect('/echo', options);
    await opened(ws);
    const end = closed(ws);
    ws.send(Buffer.from([0xce, 0xba, 0xed, 0xa0, 0x80]), { binary: false });
    return { close: await end, extensions: ws.extensions };
  },

  // One byte past max_msg: the server fails with 1009.
  async too_big(options) {
    const ws = connect('/echo', options);
    await opened(ws);
    const end = closed(ws);
    ws.send(Buffer.alloc(MAX_MSG + 1));
    return { close: await end, extensions: ws.extensions };
  },

  // The app picks "chat" when the client offers it (sec-websocket-protocol in the 101).
  async subprotocol(options) {
    const offered = connect('/echo', options, ['superchat', 'chat']);
    await opened(offered);
    const chosen = offered.protocol;
    const answer = await roundTrip(offered, 'with a subprotocol');
    offered.close(1000);
    await closed(offered);
    const none = connect('/echo', options);
    await opened(none);
    const without = none.protocol;
    none.close(1000);
    await closed(none);
    return { chosen, answer: answer.text, without };
  },
};

function withDeadline(promise) {
  let timer;
  const deadline = new Promise((resolve) => {
    timer = setTimeout(() => resolve({ error: 'timeout' }), DEADLINE_MS);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

async function runAll() {
  const runs = [];
  for (const [name, scenario] of Object.entries(scenarios)) {
    for (const deflate of [false, true]) {
      const label = deflate ? `${name}+deflate` : name;
      runs.push(withDeadline(scenario({ perMessageDeflate: deflate }))
        .catch((e) => ({ error: e.message }))
        .then((result) => report({ scenario: label, ...result })));
    }
  }
  await Promise.all(runs);
  report({ done: true });
}

async function runStop() {
  const ws = connect('/echo');
  const end = closed(ws);
  await opened(ws);
  report({ open: true });
  report({ scenario: 'server_stop', close: await withDeadline(end) });
}

if (!port || !['all', 'stop'].includes(mode)) {
  console.error('usage: node ws_interop.js PORT all|stop');
  process.exit(2);
}
(mode === 'all' ? runAll() : runStop()).then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
