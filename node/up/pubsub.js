'use strict';
// Pub/sub inside one `up` process (docs/websockets.md, "PubSub"), with the
// interface of up_node's (node/up_node/pubsub.js) that the shared Ruby side calls
// (opal/up/node/subscription.rb, pub_sub_server.rb; lib/up/pub_sub.rb) and the cluster link
// feeds (node/up_node/cluster_pubsub.js), but done by the engine (ext/up/node/pubsub.c over
// ext/up/engine/pubsub/pubsub.h): channels, glob patterns and the fan-out are the engine's, and a
// subscription without a block is written to its client by the loop, the frame encoded once
// and shared by every subscriber, with no JavaScript per message. A subscription with a block
// has an id here, and the engine's events bring its messages (websocket.js hands them to
// #deliver) after the publisher's call, in publish order.
//
// Owners: a connection (websocket.js's Connection, whose token names it to the addon) or the
// process's own (PubSubServer's, without a token), each with a Map of its subscriptions by
// channel (one per channel or pattern: subscribing again replaces it).

const { plain, isUtf8 } = require('./exchange');

// The addon's deliveries (pubsub.h's up_pubsub_delivery_t).
const DELIVERY = { text: 0, binary: 1, sse: 2, block: 3 };
const MAX_ID = 0xffffffff;

function keyOf(channel, isPattern) {
  return isPattern ? `p${channel}` : `c${channel}`;
}

// One subscription as this side keeps it.
class Record {
  constructor(id, owner, key, channel, isPattern, ruby, handle) {
    this.id = id;
    this.owner = owner;
    this.key = key;
    this.channel = channel;
    this.isPattern = isPattern;
    this.ruby = ruby;
    this.handle = handle; // the engine's, to end one of the process's own
  }
}

class PubSub {
  constructor(Opal, addon) {
    this.Opal = Opal;
    this.addon = addon;
    this.byId = new Map(); // id => Record, for the blocks' messages
    this.nextId = 1;
  }

  newId() {
    do {
      this.nextId = this.nextId >= MAX_ID ? 1 : this.nextId + 1;
    } while (this.byId.has(this.nextId));
    return this.nextId;
  }

  // Subscribes owner to channel. Returns [the Up::Subscription it replaced or nil, whether it
  // is the first of this process on it].
  subscribe(owner, channel, isPattern, delivery, ruby) {
    const nil = this.Opal.nil;
    channel = String(channel);
    const token = owner.token === undefined ? null : owner.token;
    const id = this.newId();
    const result = this.addon.subscribe(token, channel, isPattern, DELIVERY[delivery], id);
    if (result === null) return [nil, false]; // the client closed meanwhile
    const [handle, replacedId, first] = result;
    const key = keyOf(channel, isPattern);
    if (owner.subscriptions === null) owner.subscriptions = new Map();
    const old = owner.subscriptions.get(key);
    const record = new Record(id, owner, key, channel, isPattern, ruby, handle);
    owner.subscriptions.set(key, record);
    this.byId.set(id, record);
    if (replacedId !== 0) this.byId.delete(replacedId);
    if (old === undefined) return [nil, first];
    // The engine replaces a client's own; the process's own is ended here, after the new one
    // is in (so it is not the channel's last).
    if (token === null) this.end(old);
    this.byId.delete(old.id);
    return [old.ruby, first];
  }

  // Ends owner's subscription to channel. Returns [the Up::Subscription that ended or nil,
  // whether it was the last of this process on it].
  unsubscribe(owner, channel, isPattern) {
    const key = keyOf(String(channel), isPattern);
    const record = owner.subscriptions === null ? undefined : owner.subscriptions.get(key);
    if (record === undefined) return [this.Opal.nil, false];
    owner.subscriptions.delete(key);
    return [record.ruby, this.end(record)];
  }

  // Ends every subscription of owner (it closed). Returns [[Up::Subscription, last], ...].
  unsubscribeAll(owner) {
    const ended = [];
    if (owner.subscriptions === null) return ended;
    for (const record of owner.subscriptions.values()) ended.push([record.ruby, this.end(record)]);
    owner.subscriptions = null;
    return ended;
  }

  // Whether it was the channel's last.
  end(record) {
    this.byId.delete(record.id);
    const token = record.owner.token === undefined ? null : record.owner.token;
    const r = this.addon.unsubscribe(token, record.channel, record.isPattern, record.handle);
    return r % 2 === 1;
  }

  // Up::Server#publish_local's: to this process's subscribers, once the running callback
  // returned. data: an Opal String, or a Buffer (from the cluster link).
  publish(channel, data) {
    if (Buffer.isBuffer(data)) this.addon.publish(String(channel), data, true);
    else this.addon.publish(String(channel), plain(data), isUtf8(data));
  }

  // A message for a block subscription (websocket.js's events): text when it is UTF-8, else
  // one char a byte, marked binary (as up_ruby gives it).
  deliver(id, channel, data, binary) {
    const record = this.byId.get(id);
    if (record === undefined) return; // ended since it was published
    record.ruby.$deliver(channel, binary ? this.Opal.enc(data, 'binary') : data);
  }
}

module.exports = { PubSub };
