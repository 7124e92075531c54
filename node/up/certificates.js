'use strict';
// The certificates of `up`'s TLS listeners: what the addon makes a listener's TLS context of
// (ext/up/node/tls.c) from Up::TLSSettings' files, and their reload on HUP, which loads every
// one again from its files and has the listeners serve them to new connections (open ones go
// on with theirs), all or none: one that does not load keeps the old ones and says why in one
// line, as up_ruby's Up::TLSSetup#reload does. Each process (a single one, or each worker)
// reloads its own.

const { execSync } = require('node:child_process');

// A listener's settings with the key's passphrase, which its command prints (Puma's
// key_password_command, as Up::TLSSettings#password runs it), run in each process that loads
// the key, again at each reload. null: plain TCP. Throws when the command fails.
function tlsSettings(tls) {
  if (!tls) return null;
  const settings = { ...tls, key_password: null };
  if (tls.key_password_command) {
    try {
      const out = execSync(tls.key_password_command, { stdio: ['ignore', 'pipe', 'ignore'] });
      settings.key_password = out.toString().replace(/\r?\n$/, '');
    } catch (error) {
      throw new Error(`--key-password-command ${JSON.stringify(tls.key_password_command)} failed (exit ${error.status})`);
    }
  }
  return settings;
}

// Loads the certificates of every TLS listener of this process again (options.listen_fds and
// listen_tls, as serve.js adopted them) and logs the outcome, prefixed with who ("HUP",
// "worker 0: HUP"). Nothing to do, and nothing logged, without TLS listeners.
function reloadCertificates(addon, options, log, who) {
  const listeners = [];
  options.listen_fds.forEach((fd, i) => {
    if (options.listen_tls[i]) listeners.push([fd, options.listen_tls[i]]);
  });
  if (listeners.length === 0) return;
  try {
    const subjects = addon.reloadTLS(listeners.map(([fd, tls]) => [fd, tlsSettings(tls)]));
    log.line(`${who}: reloaded the certificates (${[...new Set(subjects)].join('; ')}); new connections get them`);
  } catch (error) {
    log.line(`${who}: the certificates were not reloaded, the old ones serve on: ${error.message}`);
  }
}

module.exports = { tlsSettings, reloadCertificates };
