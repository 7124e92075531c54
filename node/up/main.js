'use strict';
// Entry point of `up`'s Node process. Up::Node::AddonLauncher (lib/up/node/addon_launcher.rb)
// execs `node main.js` with the checked options as JSON in UP_NODE_OPTIONS, as up_node's
// launcher does; the process serves through the engine addon (serve.js).

const options = JSON.parse(process.env.UP_NODE_OPTIONS);

require('./serve').run(options);
