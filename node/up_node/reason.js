'use strict';
// The reason phrase of a status line, as up_ruby writes it (ext/up/engine/http1/response.c): RFC
// 9110's names, and none for a status it does not name. Node's table has older names for
// two of them and names three more (418 I'm a Teapot, 509, 510).

const { STATUS_CODES } = require('node:http');

const RFC9110 = {
  413: 'Content Too Large', // Node: Payload Too Large (RFC 7231)
  422: 'Unprocessable Content', // Node: Unprocessable Entity (RFC 4918)
};
const UNNAMED = new Set([418, 509, 510]);

function reason(status) {
  if (UNNAMED.has(status)) return '';
  return RFC9110[status] || STATUS_CODES[status] || '';
}

module.exports = { reason };
