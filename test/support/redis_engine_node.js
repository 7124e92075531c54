'use strict';
// Runs node/up_node/redis_pubsub.js's engines for test/support/node_redis_engine.rb, which
// drives them from Ruby as up_ruby's engine is driven in test/test_pubsub_redis.rb. One JSON
// object a line each way; bytes travel as base64.
//
//   in:  { op: 'new', id, url }, { op: 'subscribe' | 'unsubscribe', id, channel, pattern },
//        { op: 'publish', id, seq, channel, message }, { op: 'stats', id, seq },
//        { op: 'close', id, seq }
//   out: { ev: 'deliver', id, channel, message }, { ev: 'log', id, line },
//        { ev: 'reply', seq, value } (to publish: queued; to stats: the stats; to close: null)

const readline = require('node:readline');
const { RedisPubSub } = require('../../node/up_node/redis_pubsub');

const engines = new Map();

function emit(object) {
  process.stdout.write(`${JSON.stringify(object)}\n`);
}

const from64 = (text) => Buffer.from(text, 'base64');

function handle(c) {
  const engine = engines.get(c.id);
  switch (c.op) {
    case 'new':
      engines.set(c.id, new RedisPubSub(c.url,
        (channel, message) => emit({ ev: 'deliver', id: c.id, channel: channel.toString('base64'), message: message.toString('base64') }),
        (line) => emit({ ev: 'log', id: c.id, line })));
      break;
    case 'subscribe':
      engine.subscribe(from64(c.channel), c.pattern);
      break;
    case 'unsubscribe':
      engine.unsubscribe(from64(c.channel), c.pattern);
      break;
    case 'publish':
      emit({ ev: 'reply', seq: c.seq, value: engine.publish(from64(c.channel), from64(c.message)) });
      break;
    case 'stats':
      emit({ ev: 'reply', seq: c.seq, value: engine.stats() });
      break;
    case 'close':
      engine.close();
      emit({ ev: 'reply', seq: c.seq, value: null });
      break;
    default:
      throw new Error(`unknown op ${c.op}`);
  }
}

readline.createInterface({ input: process.stdin }).on('line', (line) => handle(JSON.parse(line)));
process.stdin.on('end', () => process.exit(0));
