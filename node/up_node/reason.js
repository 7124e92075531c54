'use strict';
// The reason phrase of a status line, as up_ruby writes it (ext/up/engine/response.c): RFC
// 9110's names. Node's table has older names for two of them.

const { STATUS_CODES } = require('node:http');

const RFC9110 = {
  413: 'Content Too Large', // Node: Payload Too Large (RFC 7231)
  422: 'Unprocessable Content', // Node: Unprocessable Entity (RFC 4918)
};

function reason(status) {
  return RFC9110[status] || STATUS_CODES[status] || 'Unknown';
}

module.exports = { reason };
