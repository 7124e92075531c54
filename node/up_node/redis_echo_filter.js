'use strict';
// Decides, for each message that arrives on the Redis subscriber connection, whether it goes
// to this server's subscribers: once per PUBLISH that Redis executed, never for a PUBLISH of
// our own (delivered locally when published). The same books as up_ruby's
// Up::PubSub::Redis::EchoFilter (lib/up/pub_sub/redis/echo_filter.rb), whose engine's class
// comment gives the rule and why it is exact; redis_pubsub.js calls this in the order the
// replies arrive on the subscriber connection. No I/O here.
//
// A subscription is a key: 'c' + channel or 'p' + pattern. A group is the run of copies one
// PUBLISH produced on our connection, one per subscription of ours that it matched; Redis
// writes them back to back. A message is identified by its channel's and its bytes (latin1
// strings, so any bytes compare exactly).

function messageKey(channel, message) {
  const c = channel.toString('latin1');
  return `${c.length}:${c}${message.toString('latin1')}`;
}

class EchoFilter {
  constructor() {
    this.reset();
  }

  // Forgets everything: a new subscriber connection shares no replies with the old one.
  reset() {
    this.expected = new Map(); // message key => seqs of our PUBLISHes awaited, oldest first
    this.order = []; // [seq, key, bytes] in seq order, until expired
    this.size = 0; // expectations live
    this.kept = 0; // expectations kept for expiry (live or matched)
    this.keptBytes = 0;
    this.endGroup();
  }

  // Our PUBLISH number seq of message on channel is about to be written, and Redis will echo
  // it to us if a subscription of ours matches it (the caller registers it only while we
  // subscribe to that channel or to any pattern).
  expect(seq, channel, message) {
    const key = messageKey(channel, message);
    const seqs = this.expected.get(key);
    if (seqs === undefined) this.expected.set(key, [seq]);
    else seqs.push(seq);
    const bytes = channel.length + message.length;
    this.order.push([seq, key, bytes]);
    this.size += 1;
    this.kept += 1;
    this.keptBytes += bytes;
  }

  // One copy of a message, received through subscription. Returns 'deliver' (the first copy of
  // another server's PUBLISH), 'echo' (the first copy of one of ours, dropped) or 'repeat' (a
  // further copy of the same PUBLISH, dropped).
  copy(subscription, channel, message) {
    const key = messageKey(channel, message);
    if (this.groupSubscriptions !== null && !this.groupSubscriptions.has(subscription) && this.groupKey === key) {
      this.groupSubscriptions.add(subscription);
      return 'repeat';
    }
    this.groupSubscriptions = new Set([subscription]);
    this.groupKey = key;
    if (!this.expected.has(key)) return 'deliver';
    this.dropOldest(key);
    return 'echo';
  }

  // A reply that is not a message (a pong, a confirmation) ends the group.
  endGroup() {
    this.groupSubscriptions = null;
    this.groupKey = null;
  }

  // The pong of a PING written after the reply to our PUBLISH number seq: the echoes of seq
  // and before have all arrived.
  pong(seq) {
    this.endGroup();
    this.expire((s) => s <= seq);
  }

  // A (un)subscription was confirmed: it was sent only once every PUBLISH we wrote had been
  // answered, so every echo of those came before it.
  subscriptionsChanged() {
    this.endGroup();
    this.expire(() => true);
  }

  oldestSeq() {
    return this.order.length === 0 ? null : this.order[0][0];
  }

  expire(due) {
    let n = 0;
    while (n < this.order.length && due(this.order[n][0])) {
      const [seq, key, bytes] = this.order[n];
      this.kept -= 1;
      this.keptBytes -= bytes;
      const seqs = this.expected.get(key);
      if (seqs !== undefined && seqs[0] === seq) this.dropOldest(key);
      n += 1;
    }
    if (n > 0) this.order.splice(0, n);
  }

  dropOldest(key) {
    const seqs = this.expected.get(key);
    seqs.shift();
    if (seqs.length === 0) this.expected.delete(key);
    this.size -= 1;
  }
}

module.exports = { EchoFilter };
