'use strict';
// Entry point of up_node's Node process. Up::Node::Launcher (lib/up/node/launcher.rb) execs
// `node main.js` with the checked options as JSON in UP_NODE_OPTIONS and the compiled app's
// path among them. With -w N (N > 1) the first process is the cluster primary, which only
// supervises (primary.js); node:cluster runs this same file again for each worker, and a
// worker, like a single process (-w 0 or 1), loads the app and serves (worker.js).

const cluster = require('node:cluster');

const options = JSON.parse(process.env.UP_NODE_OPTIONS);

if (options.workers > 1 && cluster.isPrimary) {
  require('./primary').run(options);
} else {
  // The options hold the session ticket secret of HTTPS binds: the app and what it spawns
  // do not see them. The primary keeps them, for the workers it forks.
  delete process.env.UP_NODE_OPTIONS;
  require('./worker').run(options);
}
