'use strict';
// Runs up_node's glob matcher (node/up_node/glob.js) on cases for test/test_up_node_glob.rb:
// reads a JSON array of [pattern, string] from stdin, writes a JSON array of booleans.

const { match } = require('../../node/up_node/glob');

let input = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => { input += chunk; });
process.stdin.on('end', () => {
  const cases = JSON.parse(input);
  const results = cases.map(([pattern, string]) => match(Buffer.from(pattern), Buffer.from(string)));
  process.stdout.write(JSON.stringify(results));
});
