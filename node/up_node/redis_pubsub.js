'use strict';
// Pub/sub between servers that share a Redis, for up_node and up (--redis-url): the Node
// runtimes' twin of up_ruby's Up::PubSub::Redis (lib/up/pub_sub/redis.rb), with the same
// rules, limits and log lines, over the npm ioredis client (node/package.json) instead of
// Ruby sockets and threads. opal/up/node/redis_engine.rb makes it an engine of
// lib/up/pub_sub.rb's; the process that owns the cluster's pub/sub makes it (attach, below):
// the primary with --preload, else each serving process.
//
// Two connections: the subscriber (SUBSCRIBE/PSUBSCRIBE per channel and pattern, while
// this server has subscribers to it) and the publisher (a RESP2 subscriber cannot PUBLISH).
// #publish delivers to this server's subscribers at once (the caller's) and queues a PUBLISH
// for the others; the queue goes out in batches, one batch answered before the next.
//
// Echoes: up_ruby's rule, unchanged (its class comment has the proof). No PUBLISH and no
// (un)subscription are ever in flight together, so our subscriptions in Redis when a PUBLISH
// of ours runs are those last confirmed; before writing PUBLISH n of (c, m) we expect its
// echo when we subscribe to c or to any pattern; the first group of copies of (c, m) while an
// expectation of (c, m) is kept is dropped as that echo; expectations end at the next
// confirmation, or at the pong of the "PING up-pubsub:n" sent once PUBLISH n was answered.
// The rule needs every event of the subscriber connection in the order Redis sent it. ioredis
// emits messages while it parses and settles a command's promise (a confirmation, a pong)
// there too, whose callbacks run as microtasks; so messages are handled in microtasks queued
// as they are parsed, and the commands of the subscriber connection are sent as
// ioredis.Command objects whose own promise we listen to (one microtask from the parse),
// one channel or pattern per command, so that each confirmation is seen where it came.
//
// Reconnection: each connection is reconnected by ioredis after BACKOFF_FIRST_MS, doubling
// up to BACKOFF_MAX_MS, with jitter; nothing is resent by the client (at most once) and it
// subscribes to nothing by itself: when the subscriber is back, this sends every current
// subscription again (a subscription change: rule above), then the queue is published in
// order. A connection silent for REPLY_TIMEOUT_MS while a reply is awaited is cut and
// reconnected. While Redis is away publishes queue up to MAX_PENDING_*; past that a message
// is dropped, counted and logged (at most one line per LOG_INTERVAL_MS); a batch in flight
// when the publisher broke is not resent but counted as dropped. One line says an outage
// began, one that it ended. Nothing here throws into its caller, nor leaves an 'error'
// event unheard (which would end the process).

const { isUtf8 } = require('node:buffer');
const { Redis, Command, ReplyError } = require('ioredis');
const { EchoFilter } = require('./redis_echo_filter');
const { bytes } = require('./exchange');

// The same bounds as up_ruby's (lib/up/pub_sub/redis.rb says why each).
const MAX_PENDING_MESSAGES = 10000;
const MAX_PENDING_BYTES = 16 * 1024 * 1024;
const BATCH_MESSAGES = 512;
const BATCH_BYTES = 1024 * 1024;
const BACKOFF_FIRST_MS = 50;
const BACKOFF_MAX_MS = 5000;
const CONNECT_TIMEOUT_MS = 2000;
const REPLY_TIMEOUT_MS = 5000;
const IDLE_PING_MS = 15000;
const LOG_INTERVAL_MS = 10000;
// How often the timeouts above are looked at.
const CHECK_MS = 250;
const PING_PREFIX = 'up-pubsub:';

// Where Redis is, from a URL Up::Options already checked with up_ruby's
// Up::PubSub::Redis::Address (so a bad one stopped the start with up_ruby's words):
// redis://[[user]:password@]host[:port][/db] (the database is ignored: pub/sub is not scoped
// by it), unix:///path, redis+unix:///path. label: the URL for log lines, without password.
function parseAddress(url) {
  const u = new URL(url);
  if (u.protocol === 'unix:' || u.protocol === 'redis+unix:') {
    const path = decodeURIComponent(u.pathname);
    return { connect: { path }, label: `unix://${path}` };
  }
  if (u.protocol !== 'redis:') throw new Error(`Redis URL ${JSON.stringify(url)}: the scheme must be one of redis, unix, redis+unix`);
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = u.port === '' ? 6379 : Number(u.port);
  const username = u.username === '' ? null : decodeURIComponent(u.username);
  const password = u.password === '' ? null : decodeURIComponent(u.password);
  const login = username ? `${username}:***@` : password ? ':***@' : '';
  const connect = { host, port };
  if (username) connect.username = username;
  if (password) connect.password = password;
  return { connect, label: `redis://${login}${host.includes(':') ? `[${host}]` : host}:${port}` };
}

// A subscription's key in the maps: 'c' or 'p', then the name's bytes one char each.
function subscriptionKey(isPattern, name) {
  return `${isPattern ? 'p' : 'c'}${name.toString('latin1')}`;
}

function backoff(times) {
  const delay = Math.min(BACKOFF_FIRST_MS * 2 ** (times - 1), BACKOFF_MAX_MS);
  return Math.round(delay * (0.8 + 0.4 * Math.random()));
}

class RedisPubSub {
  // url: --redis-url. deliver(channel, message): another server's message (Buffers) for this
  // server's subscribers. log(line): one line per event worth it. Channels, patterns and
  // messages are Buffers everywhere here: any bytes.
  constructor(url, deliver, log) {
    this.address = parseAddress(url);
    this.deliverOut = deliver;
    this.logOut = log;
    this.wanted = new Map(); // key (subscriptionKey) => [isPattern, name]: what this server wants
    this.wantedChanged = false;
    this.queue = []; // [channel Buffer, message Buffer], oldest first
    this.queueBytes = 0;
    this.inFlight = 0; // messages of the batch written and not yet answered
    this.batchSentAt = 0;
    this.seq = 0; // the number of the last PUBLISH taken for writing
    this.ackedSeq = 0; // the last PUBLISH answered
    this.counts = { published: 0, received: 0, delivered_locally: 0, echoes: 0, reconnects: 0, dropped: 0 };
    this.echoes = new EchoFilter();
    this.closing = false;
    this.everConnected = false;
    this.down = false; // an outage was logged and has not ended
    this.loggedAt = new Map();
    this.suppressed = new Map();
    this.subGen = 0; // sessions of the subscriber connection (each 'ready')
    this.pubGen = 0;
    this.subReady = false;
    this.pubReady = false;
    this.pubSentAt = 0;
    this.pubPingSince = null; // the publisher's keepalive PING in flight since
    this.clearSubscriber();
    this.sub = this.connect('subscriber');
    this.pub = this.connect('publisher');
    this.timer = setInterval(() => this.safely(() => this.check()), CHECK_MS);
    this.timer.unref();
  }

  // ---- The caller's side (redis_engine.rb): never throws

  // The server gained its first subscriber to channel (or pattern, Redis PSUBSCRIBE rules).
  subscribe(channel, isPattern) {
    this.safely(() => this.change(channel, isPattern, true));
  }

  unsubscribe(channel, isPattern) {
    this.safely(() => this.change(channel, isPattern, false));
  }

  // Queues message on channel for Redis. True when queued; false when the queue is full
  // (dropped, counted, logged) or the engine is closed. The caller delivers to this server's
  // own subscribers.
  publish(channel, message) {
    try {
      const c = channel;
      const size = c.length + message.length;
      this.counts.delivered_locally += 1;
      let why = null;
      if (this.closing) why = 'the engine is closed';
      else if (this.queue.length >= MAX_PENDING_MESSAGES || (this.queue.length > 0 && this.queueBytes + size > MAX_PENDING_BYTES)) {
        why = `${this.queue.length} messages (${this.queueBytes} bytes) are waiting for Redis`;
      }
      if (why !== null) {
        this.counts.dropped += 1;
        this.logLimited('dropped', `message to ${JSON.stringify(channel.toString('latin1'))} dropped: ${why}`);
        return false;
      }
      this.queue.push([c, message]);
      this.queueBytes += size;
      this.work();
      return true;
    } catch (error) {
      this.log(`publish failed: ${error.message}`);
      return false;
    }
  }

  // Counters, then the state now, as up_ruby's #stats.
  stats() {
    return { ...this.counts, pending: this.queue.length, subscriptions: this.subscribed, connected: this.subReady && this.pubReady };
  }

  // Stops both connections at once; what is queued is dropped and counted.
  close() {
    if (this.closing) return;
    this.closing = true;
    clearInterval(this.timer);
    this.counts.dropped += this.queue.length;
    this.queue = [];
    this.queueBytes = 0;
    this.sub.disconnect();
    this.pub.disconnect();
  }

  change(channel, isPattern, on) {
    const key = subscriptionKey(isPattern, channel);
    if (on === this.wanted.has(key)) return;
    if (on) this.wanted.set(key, [isPattern, channel]);
    else this.wanted.delete(key);
    this.wantedChanged = true;
    this.work();
  }

  // ---- Connections

  connect(role) {
    // Failed attempts since this connection was last up: the back-off's exponent (ioredis
    // counts from its last TCP connect, which a refused handshake follows).
    const attempts = { n: 0 };
    const client = new Redis({
      ...this.address.connect,
      protocol: 2, // RESP2, as up_ruby speaks: any Redis with pub/sub will do
      connectTimeout: CONNECT_TIMEOUT_MS,
      retryStrategy: () => backoff(++attempts.n),
      enableOfflineQueue: false,
      autoResubscribe: false,
      autoResendUnfulfilledCommands: false,
      maxRetriesPerRequest: null,
      enableReadyCheck: false,
      disableClientInfo: true,
    });
    client.on('error', (error) => this.connectError(error));
    client.on('ready', () => this.safely(() => this.handshake(client, role, attempts)));
    client.on('close', () => this.safely(() => this.lost(role)));
    if (role === 'subscriber') {
      client.on('messageBuffer', (channel, message) => {
        const gen = this.subGen;
        queueMicrotask(() => this.safely(() => this.copy(gen, subscriptionKey(false, channel), channel, message)));
      });
      // ioredis gives the pattern as a string (UTF-8): a key of its own, one per pattern.
      client.on('pmessageBuffer', (pattern, channel, message) => {
        const gen = this.subGen;
        queueMicrotask(() => this.safely(() => this.copy(gen, `q${pattern}`, channel, message)));
      });
    }
    return client;
  }

  connectError(error) {
    if (this.closing) return;
    this.logLimited(`connect ${error.message}`, `cannot connect to ${this.address.label}: ${error.message}; ` +
      `${this.queue.length} messages waiting; retrying`);
  }

  // As up_ruby's handshake: a connection counts once Redis answered a PING (after AUTH, which
  // ioredis sends), within CONNECT_TIMEOUT_MS; else it is cut and tried again.
  handshake(client, role, attempts) {
    if (this.closing) return;
    const stream = client.stream;
    let settled = false;
    const fail = (why) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (client.stream !== stream || this.closing) return;
      this.logLimited(`connect ${why}`, `cannot connect to ${this.address.label}: ${why}; ` +
        `${this.queue.length} messages waiting; retrying`);
      stream.destroy();
    };
    const timer = setTimeout(() => fail(`no reply to PING in ${CONNECT_TIMEOUT_MS / 1000} s`), CONNECT_TIMEOUT_MS);
    timer.unref();
    client.ping().then((reply) => {
      if (reply !== 'PONG') return fail(`PING answered ${JSON.stringify(String(reply))}`);
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (client.stream !== stream || this.closing) return;
      attempts.n = 0;
      this.safely(() => this.up(role));
    }, (error) => fail(`PING answered ${error.message}`));
  }

  up(role) {
    if (this.closing) return;
    if (role === 'subscriber') {
      this.subGen += 1;
      this.subReady = true;
      this.subSentAt = Date.now();
      this.wantedChanged = true;
    } else {
      this.pubGen += 1;
      this.pubReady = true;
      this.pubSentAt = Date.now();
    }
    if (!(this.subReady && this.pubReady)) return this.work();
    if (this.everConnected) {
      this.counts.reconnects += 1;
      this.log(`reconnected to ${this.address.label}; restoring ${this.wanted.size} subscriptions, publishing ` +
        `${this.queue.length} waiting messages (${this.counts.dropped} dropped so far)`);
    } else {
      this.log(`connected to ${this.address.label}`);
    }
    this.everConnected = true;
    this.down = false;
    this.work();
  }

  // A connection closed (Redis went away, or we cut it): ioredis reconnects it. If it was up,
  // the other one is cut too, as up_ruby ends a session: what the lost one had in flight may
  // or may not have run, so the echoes the subscriber still expects are no longer known.
  lost(role) {
    if (this.closing) return;
    const was = role === 'subscriber' ? this.subReady : this.pubReady;
    const other = role === 'subscriber' ? this.pub : this.sub;
    if (was && other.stream && !other.stream.destroyed) other.stream.destroy();
    if (role === 'subscriber') {
      this.subReady = false;
      this.clearSubscriber();
    } else {
      this.pubReady = false;
      this.pubGen += 1; // what the lost connection would still answer is not ours
      this.pubPingSince = null;
      if (this.inFlight > 0) {
        this.counts.dropped += this.inFlight;
        this.log(`${this.inFlight} messages written to ${this.address.label} got no reply and are not sent again ` +
          '(counted as dropped: they may or may not have been published)');
        this.inFlight = 0;
      }
    }
    if (was && !this.down) {
      this.down = true;
      this.log(`connection to ${this.address.label} lost; reconnecting (${this.queue.length} messages waiting)`);
    }
  }

  // The subscriber connection's state, for a new connection.
  clearSubscriber() {
    this.subGen += 1;
    this.sent = new Map(); // the subscriptions sent on this connection
    this.sentPatterns = 0;
    this.awaiting = 0; // (un)subscriptions sent and not yet confirmed
    this.subReplies = 0; // replies awaited on it
    this.subWaitingSince = null;
    this.subLastRead = Date.now();
    this.pingSeq = null;
    this.subscribed = 0;
    this.echoes.reset();
  }

  // Cuts both connections (Redis does not answer); ioredis reconnects them.
  breakSession(why) {
    this.log(`${why}; reconnecting`);
    for (const client of [this.sub, this.pub]) {
      if (client.stream) client.stream.destroy();
    }
  }

  // The timers: a reply awaited too long, a connection idle long enough for a PING.
  check() {
    if (this.closing) return;
    const now = Date.now();
    if (this.subWaitingSince !== null && now - Math.max(this.subWaitingSince, this.subLastRead) >= REPLY_TIMEOUT_MS) {
      return this.breakSession(`no reply from ${this.address.label} in ${REPLY_TIMEOUT_MS / 1000} s`);
    }
    if (this.inFlight > 0 && now - this.batchSentAt >= REPLY_TIMEOUT_MS) {
      return this.breakSession(`no reply to PUBLISH from ${this.address.label} in ${REPLY_TIMEOUT_MS / 1000} s`);
    }
    if (this.pubPingSince !== null && now - this.pubPingSince >= REPLY_TIMEOUT_MS) {
      return this.breakSession(`no reply to PING from ${this.address.label} in ${REPLY_TIMEOUT_MS / 1000} s`);
    }
    this.work();
  }

  // ---- What arrives on the subscriber connection, in order

  copy(gen, subscription, channel, message) {
    if (gen !== this.subGen) return;
    this.subLastRead = Date.now();
    const fate = this.echoes.copy(subscription, channel, message);
    if (fate === 'echo') {
      this.counts.echoes += 1;
      this.work(); // room for the writer if it waits on the expectations
    }
    if (fate !== 'deliver') return;
    this.counts.received += 1;
    this.deliverOut(channel, message);
  }

  subReply(gen) {
    if (gen !== this.subGen) return false;
    this.subLastRead = Date.now();
    this.subReplies -= 1;
    if (this.subReplies === 0) this.subWaitingSince = null;
    return true;
  }

  onConfirmation(gen, count) {
    if (!this.subReply(gen)) return;
    this.awaiting -= 1;
    this.subscribed = count;
    this.echoes.subscriptionsChanged();
    if (this.awaiting === 0) this.work();
  }

  onPong(gen, reply) {
    if (!this.subReply(gen)) return;
    const arg = String(Array.isArray(reply) ? reply[1] : reply);
    if (!arg.startsWith(PING_PREFIX)) return this.breakSession(`unexpected reply ${JSON.stringify(arg.slice(0, 200))}`);
    this.echoes.pong(this.pingSeq);
    this.pingSeq = null;
    this.work();
  }

  // An error instead of a reply (an ACL NOPERM, the connection closed under the command):
  // nothing changed in Redis; expectations end as they would have at the reply.
  onRefusal(gen, verb, error) {
    if (!this.subReply(gen)) return;
    if (verb === 'ping') {
      this.echoes.pong(this.pingSeq);
      this.pingSeq = null;
    } else {
      this.awaiting -= 1;
      this.echoes.subscriptionsChanged();
    }
    if (error instanceof ReplyError) this.logLimited(`refused ${verb} ${error.message}`, `Redis refused ${verb.toUpperCase()}: ${error.message}`);
    this.work();
  }

  // ---- Writing: what goes next, by the rule of the file's comment

  work() {
    if (this.closing || !this.subReady || !this.pubReady || this.awaiting > 0) return;
    const now = Date.now();
    if (this.wantedChanged && this.inFlight === 0) {
      this.wantedChanged = false;
      if (this.sendSubscriptions(now)) return;
    }
    if (this.pingSeq === null && this.pingDue(now)) this.ping(now);
    if (this.inFlight === 0 && this.queue.length > 0 && this.echoes.kept < MAX_PENDING_MESSAGES &&
        this.echoes.keptBytes < MAX_PENDING_BYTES) {
      return this.publishBatch(now);
    }
    if (this.inFlight === 0 && this.pubPingSince === null && now - this.pubSentAt >= IDLE_PING_MS) this.keepalive(now);
  }

  // Sends what brings Redis to this.wanted; false when it is there.
  sendSubscriptions(now) {
    const added = [];
    const removed = [];
    for (const [key, entry] of this.wanted) if (!this.sent.has(key)) added.push(entry);
    for (const [key, entry] of this.sent) if (!this.wanted.has(key)) removed.push(entry);
    if (added.length === 0 && removed.length === 0) return false;
    this.sent = new Map(this.wanted);
    this.sentPatterns = 0;
    for (const [isPattern] of this.sent.values()) if (isPattern) this.sentPatterns += 1;
    for (const [isPattern, name] of removed) this.subCommand(isPattern ? 'punsubscribe' : 'unsubscribe', name, now);
    for (const [isPattern, name] of added) this.subCommand(isPattern ? 'psubscribe' : 'subscribe', name, now);
    return true;
  }

  // One command on the subscriber connection, its reply heard in order (file comment).
  subCommand(verb, arg, now) {
    const gen = this.subGen;
    const command = new Command(verb, [arg]);
    if (verb !== 'ping') this.awaiting += 1;
    this.subReplies += 1;
    if (this.subWaitingSince === null) this.subWaitingSince = now;
    this.subSentAt = now;
    command.promise.then(
      (reply) => this.safely(() => (verb === 'ping' ? this.onPong(gen, reply) : this.onConfirmation(gen, reply))),
      (error) => this.safely(() => this.onRefusal(gen, verb, error)));
    this.sub.sendCommand(command);
  }

  // A PING is due when answered PUBLISHes still have expectations, or after idling.
  pingDue(now) {
    const oldest = this.echoes.oldestSeq();
    return (oldest !== null && oldest <= this.ackedSeq) || now - this.subSentAt >= IDLE_PING_MS;
  }

  ping(now) {
    this.pingSeq = this.ackedSeq;
    this.subCommand('ping', `${PING_PREFIX}${this.ackedSeq}`, now);
  }

  // The publisher's idle PING; check() cuts the session if it goes unanswered.
  keepalive(now) {
    const gen = this.pubGen;
    this.pubSentAt = now;
    this.pubPingSince = now;
    this.pub.ping().then(() => {
      if (gen === this.pubGen) this.pubPingSince = null;
    }, () => {});
  }

  // Up to BATCH_MESSAGES or BATCH_BYTES from the queue, each numbered and, when Redis can
  // echo it, expected back; written at once, answered before the next batch.
  publishBatch(now) {
    const batch = [];
    let batchBytes = 0;
    while (batch.length < this.queue.length && batch.length < BATCH_MESSAGES) {
      const entry = this.queue[batch.length];
      const size = entry[0].length + entry[1].length;
      if (batch.length > 0 && batchBytes + size > BATCH_BYTES) break;
      batchBytes += size;
      batch.push(entry);
    }
    this.queue.splice(0, batch.length);
    this.queueBytes -= batchBytes;
    this.inFlight = batch.length;
    this.batchSentAt = now;
    this.pubSentAt = now;
    for (const [channel, message] of batch) {
      this.seq += 1;
      if (this.sentPatterns > 0 || this.sent.has(subscriptionKey(false, channel))) this.echoes.expect(this.seq, channel, message);
    }
    const lastSeq = this.seq;
    const gen = this.pubGen;
    const pipeline = this.pub.pipeline();
    for (const [channel, message] of batch) pipeline.publish(channel, message);
    pipeline.exec().then(
      (results) => this.safely(() => this.published(gen, lastSeq, results)),
      () => {}); // the connection closed: lost() counted the batch
  }

  published(gen, lastSeq, results) {
    if (gen !== this.pubGen) return;
    let refused = 0;
    let firstRefusal = null;
    for (const [error] of results) {
      if (error === null) continue;
      refused += 1;
      if (firstRefusal === null) firstRefusal = error.message;
    }
    this.counts.published += results.length - refused;
    this.counts.dropped += refused;
    this.ackedSeq = lastSeq;
    this.inFlight = 0;
    if (refused > 0) this.logLimited(`refused PUBLISH ${firstRefusal}`, `Redis refused ${refused} PUBLISH: ${firstRefusal}`);
    this.work();
  }

  // ---- Shared

  safely(fn) {
    try {
      return fn();
    } catch (error) {
      this.logLimited('bug', `error: ${error.stack || error}`);
      return undefined;
    }
  }

  log(line) {
    try {
      this.logOut(`redis pub/sub: ${line}`);
    } catch (_) {
      // a log that cannot be written must not stop pub/sub
    }
  }

  // The first line of a kind, then at most one per LOG_INTERVAL_MS, saying how many were
  // left out.
  logLimited(kind, line) {
    const now = Date.now();
    const at = this.loggedAt.get(kind);
    if (at !== undefined && now - at < LOG_INTERVAL_MS) {
      this.suppressed.set(kind, (this.suppressed.get(kind) || 0) + 1);
      return;
    }
    this.loggedAt.set(kind, now);
    const left = this.suppressed.get(kind) || 0;
    this.suppressed.delete(kind);
    this.log(left > 0 ? `${line} (${left} more like it not logged)` : line);
  }
}

// Another server's message as up_ruby's engine hands it over: a UTF-8 String when the bytes
// are UTF-8, else a binary one.
function rubyString(Opal, buffer) {
  return isUtf8(buffer) ? buffer.toString() : Opal.enc(buffer.toString('latin1'), 'binary');
}

// --redis-url's engine for this process, made the default engine unless config.ru chose
// another (then attached beside it), as up_ruby's runner does. live: this process talks to
// Redis (a single process, the primary with --preload, or a worker without it); else it is
// a worker whose primary runs the engine, and gets a stand-in at the same place in the
// engine list, so that its publishes through it go to the primary's (lib/up/pub_sub.rb,
// engine_number). Call it after the app loaded and before Up::PubSub.after_fork.
function attachRedis(Opal, options, log, live) {
  if (!options.redis_url) return null;
  const Engine = Opal.Up.Node.RedisEngine;
  if (!live) return Engine.$install(null);
  const redis = new RedisPubSub(options.redis_url,
    (channel, message) => Opal.Up.$publish(rubyString(Opal, channel), rubyString(Opal, message), false),
    (line) => log.line(`pub/sub: ${line}`));
  log.line(`pub/sub through ${redis.address.label}`);
  // What redis_engine.rb calls, with Opal Strings made bytes as the other runtimes send them.
  return Engine.$install({
    subscribe: (channel, isPattern) => redis.subscribe(bytes(channel), isPattern),
    unsubscribe: (channel, isPattern) => redis.unsubscribe(bytes(channel), isPattern),
    publish: (channel, message) => redis.publish(bytes(channel), bytes(message)),
    stats: () => redis.stats(),
  });
}

module.exports = { RedisPubSub, attachRedis, parseAddress };
