'use strict';
// Entry point of `up`'s Node process. Up::Node::AddonLauncher (lib/up/node/addon_launcher.rb)
// execs `node main.js` with the checked options as JSON in UP_NODE_OPTIONS and the listening
// sockets it opened (options.listen_fds). With -w N (N > 1) the first process is the cluster
// primary (up_node's, node/up_node/primary.js: it only supervises); node:cluster runs this
// file again for each worker, which inherits the listening sockets at the same numbers and
// serves them through the engine (serve.js), as a single process does. The primary gets
// `up`'s restarts (restart.js: hot and phased restarts, more or fewer workers), which need
// the addon's exec and reaping.

const cluster = require('node:cluster');
const path = require('node:path');

const options = JSON.parse(process.env.UP_NODE_OPTIONS);

if (options.workers > 1 && cluster.isPrimary) {
  // Each listening socket at its own number in every worker; 'ipc' is node:cluster's channel.
  const stdio = ['inherit', 'inherit', 'inherit'];
  for (const fd of options.listen_fds) stdio[fd] = fd;
  const free = stdio.findIndex((entry, i) => i > 2 && entry === undefined);
  stdio[free < 0 ? stdio.length : free] = 'ipc';
  for (let i = 0; i < stdio.length; i++) if (stdio[i] === undefined) stdio[i] = 'ignore';
  cluster.setupPrimary({ stdio });
  const addon = require(path.join(__dirname, '..', '..', 'lib', 'up', 'up.node'));
  const restarts = require('./restart').clusterRestarts(addon, options);
  require('../up_node/primary').run(options, restarts);
} else {
  require('./serve').run(options);
}
