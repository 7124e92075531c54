'use strict';
// Pub/sub inside one up_node process (docs/websockets.md, "PubSub"): channels and
// glob patterns (glob.js), their subscriptions, and the fan-out of each message to them. The
// Ruby API is lib/up/pub_sub.rb's (compiled in as it is) over opal/up/node/client.rb,
// subscription.rb and pub_sub_server.rb, which call this; in a cluster the worker's link
// (cluster_pubsub.js) feeds it what the primary fans out.
//
// A subscription without a block is written straight to its client here, with no Ruby: the
// message's bytes are made once and shared by every subscriber. One with a block runs it
// (Up::Subscription#deliver). Delivery is never inside the publisher's call: publishes queue,
// and the queue is drained once the running callback returns, in publish order. So a block
// never runs inside its own client's on_message, and a publisher's messages reach each
// subscriber in the order it published them.
//
// A direct subscriber that falls more than --ws-max-pending bytes behind is closed (1008 for a
// WebSocket) behind what it has, with a log line; the publisher and the others never wait.

const { isUtf8 } = require('node:buffer');
const { match } = require('./glob');
const { bytes } = require('./exchange');
const { describeThrown } = require('./thrown');

// Subscriptions of one channel, or of one pattern.
class Topic {
  constructor(name, isPattern) {
    this.name = name;
    this.pattern = isPattern ? Buffer.from(name) : null;
    this.subs = new Map(); // owner => Subscription
  }
}

class Subscription {
  // owner: the connection (websocket.js, sse.js), or the process's own owner for Up.subscribe.
  // delivery: 'text', 'binary', 'sse' (written by us) or 'block' (ruby's block runs).
  constructor(owner, topic, delivery, ruby) {
    this.owner = owner;
    this.topic = topic;
    this.delivery = delivery;
    this.ruby = ruby;
  }
}

// One published message, with its forms made on first use and shared.
class Message {
  constructor(Opal, channel, data) {
    this.Opal = Opal;
    this.channel = channel;
    this.data = data; // an Opal String, or a Buffer from the cluster link
    this.buffer = null;
    this.utf8 = null;
    this.channelBytes = null;
    this.ruby = null;
    this.sse = null;
  }

  bytes() {
    if (this.buffer === null) this.buffer = Buffer.isBuffer(this.data) ? this.data : bytes(this.data);
    return this.buffer;
  }

  isText() {
    if (this.utf8 === null) this.utf8 = isUtf8(this.bytes());
    return this.utf8;
  }

  // For pattern matching: glob.js works on bytes.
  channelBuffer() {
    if (this.channelBytes === null) this.channelBytes = Buffer.from(this.channel);
    return this.channelBytes;
  }

  // What a block gets, as up_ruby gives it: text when the bytes are UTF-8, else bytes.
  rubyString() {
    if (this.ruby === null) {
      const buffer = this.bytes();
      this.ruby = this.isText() ? buffer.toString() : this.Opal.enc(buffer.toString('latin1'), 'binary');
    }
    return this.ruby;
  }

  // The event stream's event for it (sse.js's event), one char a byte.
  sseEvent(event) {
    if (this.sse === null) this.sse = event(this.bytes().toString('latin1'), null, null);
    return this.sse;
  }
}

// The key of a subscription in its owner's map: one per channel or pattern (subscribing again
// replaces it).
function keyOf(channel, isPattern) {
  return isPattern ? `p${channel}` : `c${channel}`;
}

class PubSub {
  // maxPending: --ws-max-pending, in bytes.
  constructor(Opal, log, maxPending) {
    this.Opal = Opal;
    this.log = log;
    this.maxPending = maxPending;
    this.channels = new Map(); // name => Topic
    this.patterns = new Map(); // pattern => Topic
    this.queue = [];
    this.draining = false;
    this.drain = () => this.deliverQueued();
  }

  // Subscribes owner (a connection, or the process's own owner) to channel. Returns
  // [the Up::Subscription it replaced or nil, whether it is the first of this process on it].
  subscribe(owner, channel, isPattern, delivery, ruby) {
    channel = String(channel);
    const topics = isPattern ? this.patterns : this.channels;
    let topic = topics.get(channel);
    const first = topic === undefined;
    if (first) {
      topic = new Topic(channel, isPattern);
      topics.set(channel, topic);
    }
    const old = topic.subs.get(owner);
    const sub = new Subscription(owner, topic, delivery, ruby);
    topic.subs.set(owner, sub);
    if (owner.subscriptions === null) owner.subscriptions = new Map();
    owner.subscriptions.set(keyOf(channel, isPattern), sub);
    return [old === undefined ? this.Opal.nil : old.ruby, first];
  }

  // Ends owner's subscription to channel. Returns [the Up::Subscription that ended or nil,
  // whether it was the last of this process on it].
  unsubscribe(owner, channel, isPattern) {
    channel = String(channel);
    const key = keyOf(channel, isPattern);
    const sub = owner.subscriptions === null ? undefined : owner.subscriptions.get(key);
    if (sub === undefined) return [this.Opal.nil, false];
    owner.subscriptions.delete(key);
    return [sub.ruby, this.remove(sub)];
  }

  // Ends every subscription of owner (it closed). Returns [[Up::Subscription, last], ...].
  unsubscribeAll(owner) {
    const ended = [];
    if (owner.subscriptions === null) return ended;
    for (const sub of owner.subscriptions.values()) ended.push([sub.ruby, this.remove(sub)]);
    owner.subscriptions = null;
    return ended;
  }

  remove(sub) {
    const topic = sub.topic;
    topic.subs.delete(sub.owner);
    if (topic.subs.size > 0) return false;
    (topic.pattern === null ? this.channels : this.patterns).delete(topic.name);
    return true;
  }

  // Up::Server#publish_local's: queued for this process's subscribers. data: an Opal String,
  // or a Buffer (from the cluster link).
  publish(channel, data) {
    this.queue.push(new Message(this.Opal, String(channel), data));
    if (this.queue.length === 1 && !this.draining) queueMicrotask(this.drain);
  }

  deliverQueued() {
    this.draining = true;
    try {
      // A block may publish again: what it adds is delivered in this same pass, in order.
      for (let i = 0; i < this.queue.length; i++) {
        try {
          this.fanOut(this.queue[i]);
        } catch (error) {
          // A block's exceptions are Up::Subscription#deliver's to log; this is a bug of
          // ours, and the messages after it must still go.
          this.log.line(`error delivering a message on channel ${this.queue[i].channel}: ${describeThrown(error)}`);
        }
      }
    } finally {
      this.queue = [];
      this.draining = false;
    }
  }

  fanOut(message) {
    const topic = this.channels.get(message.channel);
    if (topic !== undefined) this.deliverTo(topic, message);
    if (this.patterns.size === 0) return;
    const channel = message.channelBuffer();
    for (const pattern of this.patterns.values()) {
      if (match(pattern.pattern, channel)) this.deliverTo(pattern, message);
    }
  }

  deliverTo(topic, message) {
    // A block may end subscriptions of this topic: take them as they are now.
    const subs = topic.subs.size === 1 ? topic.subs.values() : Array.from(topic.subs.values());
    for (const sub of subs) this.deliver(sub, message);
  }

  deliver(sub, message) {
    if (sub.delivery === 'block') {
      sub.ruby.$deliver(message.channel, message.rubyString());
      return;
    }
    const conn = sub.owner;
    if (!conn.isOpen()) return; // closing: its subscriptions end with it
    const size = message.bytes().length;
    if (this.maxPending > 0 && conn.backlog() + size > this.maxPending) {
      conn.closeSlow();
      this.log.line(`closed a subscriber from ${conn.remoteAddress}: more than ${this.maxPending} bytes ` +
        `behind on channel ${sub.topic.name.slice(0, 64)}`);
      return;
    }
    if (sub.delivery === 'sse') conn.deliver(message);
    // A message that is not UTF-8 cannot be a text frame: it goes as binary (as up_ruby's).
    else conn.deliver(message.bytes(), sub.delivery === 'binary' || !message.isText());
  }
}

module.exports = { PubSub };
