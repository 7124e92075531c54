'use strict';
// HTTPS for up_node: the Node tls options of one TLS bind with up_ruby's settings
// (ext/up/engine/transport/tls.h): TLS 1.2 and 1.3 only, the same cipher list in the server's order, the
// same groups, ALPN h2 (unless --no-http2: http2.js) then http/1.1, SNI certificates from the
// config file's tls_host, the head timeout for the handshake, and session ticket keys derived
// from the secret every worker gets and the hour, so the workers take each other's tickets.
// Up::Node::Launcher resolves which files a bind serves (Up::TLSSettings); the files are read
// here, at the start and again on HUP (reload), and a key's passphrase comes from its command
// each time, as up_ruby does it.

const crypto = require('node:crypto');
const fs = require('node:fs');
const tls = require('node:tls');
const { execSync } = require('node:child_process');

const CIPHERS = [
  'TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');
const GROUPS = 'X25519:P-256:P-384';
// As UP_TLS_TICKET_PERIOD_S: a key makes tickets for an hour. Node holds one key at a time,
// so a ticket from the hour before is not taken (a full handshake instead).
const TICKET_PERIOD_MS = 3600 * 1000;

// The key, certificate and chain of one certificate entry, read now.
function credentials(entry, passphrase) {
  const read = (path, what) => {
    try {
      return fs.readFileSync(path);
    } catch (error) {
      throw new Error(`cannot load the ${what} ${path}: ${error.message}`);
    }
  };
  // One PEM: Node takes an array of certificates as one per key, not as a chain.
  const chain = entry.ca_file ? [Buffer.from('\n'), read(entry.ca_file, 'CA file')] : [];
  return { cert: Buffer.concat([read(entry.cert_file, 'certificate'), ...chain]), key: read(entry.key_file, 'key'), passphrase };
}

// Puma's key_password_command: what the command prints, without its line break.
function passphraseOf(bind) {
  if (!bind.key_password_command) return undefined;
  try {
    return execSync(bind.key_password_command, { stdio: ['ignore', 'pipe', 'ignore'] }).toString().replace(/\r?\n$/, '');
  } catch (error) {
    throw new Error(`--key-password-command ${JSON.stringify(bind.key_password_command)} failed (${error.status})`);
  }
}

const SETTINGS = {
  minVersion: 'TLSv1.2',
  maxVersion: 'TLSv1.3',
  ciphers: CIPHERS,
  honorCipherOrder: true,
  ecdhCurve: GROUPS,
  sessionTimeout: TICKET_PERIOD_MS / 1000,
};

// RFC 6125 §6.4.3, as the engine's host_matches: the name itself, or "*.rest" for one label
// more.
function hostMatches(pattern, name) {
  name = name.toLowerCase();
  pattern = pattern.toLowerCase();
  if (pattern.startsWith('*.')) {
    const dot = name.indexOf('.');
    return dot > 0 && name.slice(dot + 1) === pattern.slice(2);
  }
  return pattern === name;
}

// A secure context for one certificate entry, or an Error that says which file is wrong, in
// up_ruby's words where it can.
function secureContext(entry, passphrase) {
  const options = { ...SETTINGS, ...credentials(entry, passphrase) };
  try {
    return { options, context: tls.createSecureContext(options) };
  } catch (error) {
    if (!passphrase && options.key.includes('ENCRYPTED')) {
      throw new Error(`the key in ${entry.key_file} is encrypted and no passphrase was given; give it with --key-password-command`);
    }
    throw new Error(`cannot use the key ${entry.key_file} with the certificate ${entry.cert_file}: ${error.message}`);
  }
}

// What one TLS bind serves, read from its files: the default certificate's options (for
// createServer, setSecureContext) and a secure context per tls_host, which SNI picks.
function load(bind) {
  const passphrase = passphraseOf(bind);
  const hosts = bind.hosts.map((host) => ({ host: host.host, context: secureContext(host, passphrase).context }));
  return { main: secureContext(bind, passphrase).options, hosts };
}

// The 48 bytes Node takes (16 of name, 16 of HMAC key, 16 of AES key) for the period now,
// derived from the secret every worker has.
function ticketKeys(secret) {
  const period = Math.floor(Date.now() / TICKET_PERIOD_MS);
  const derive = (label) => crypto.createHmac('sha256', Buffer.from(secret, 'hex')).update(`${label} ${period}`).digest();
  return Buffer.concat([derive('UP! node ticket name').subarray(0, 16), derive('UP! node ticket keys')]);
}

// One bind's HTTPS: the https.createServer options (the caller merges http's limits), and
// after the server is made, the ticket keys' rotation on the hour and the reload of the
// certificates (HUP): new connections get them, open ones go on, and a certificate that does
// not load keeps the old ones. Throws, from the constructor, an Error whose message is one
// line naming the file at fault.
class TLSBind {
  constructor(options, bind) {
    this.bind = bind;
    this.loaded = load(bind);
    this.serverOptions = {
      ...this.loaded.main,
      // h2 first: the server's order decides (http2.js takes the connections that pick it).
      ALPNProtocols: options.http2 ? ['h2', 'http/1.1'] : ['http/1.1'],
      handshakeTimeout: options.head_timeout * 1000,
      ticketKeys: ticketKeys(bind.ticket_secret),
      SNICallback: (name, done) => {
        const found = this.loaded.hosts.find((host) => hostMatches(host.host, name));
        done(null, found ? found.context : undefined);
      },
    };
  }

  watch(server) {
    this.server = server;
    // An idle keep-alive connection past its timeout: Node destroys a socket without a
    // listener here, which over TLS skips the close_notify that RFC 8446 §6.1 says MUST
    // come before a close, so the client cannot tell it from a truncation. end() sends it.
    server.on('timeout', (socket) => socket.end(() => socket.destroy()));
    const schedule = () => setTimeout(() => {
      server.setTicketKeys(ticketKeys(this.bind.ticket_secret));
      schedule();
    }, TICKET_PERIOD_MS - (Date.now() % TICKET_PERIOD_MS) + 1000).unref();
    schedule();
  }

  reload(log, who) {
    try {
      this.loaded = load(this.bind);
      this.server.setSecureContext(this.loaded.main);
      log.line(`${who}: reloaded the certificates; new connections get them`);
    } catch (error) {
      log.line(`${who}: the certificates were not reloaded, the old ones serve on: ${error.message}`);
    }
  }
}

module.exports = { TLSBind };
