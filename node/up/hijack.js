'use strict';
// The socket of a hijacked connection on `up` (rack.hijack), as Up::Node::HijackedIO
// (opal/up/node/hijacked_io.rb) reads and writes it. Exchange#fullHijack and #partialHijack
// (exchange.js) make one when the app asks, before the addon has handed the socket over
// (ext/up/node/hijack.c: a turn of the loop later): until then what the app writes waits
// here, in order, and reads find nothing yet. attach() gets the fd, wraps it in a net.Socket
// that owns it from then on (its destroy closes it, once), and sends what waited.
//
// Node's thread never blocks, so reads cannot wait: bytes that arrive are kept here (one
// latin1 char a byte) until the app takes them, and its onReadable callback (on_readable in
// Ruby) runs each time more arrive or the client ends. An app that does not read stops the
// socket's reading once MAX_UNREAD bytes wait, so a client cannot grow the memory.

const fs = require('node:fs');
const net = require('node:net');
const { plain, isUtf8 } = require('./exchange');

const MAX_UNREAD = 1 << 20;

class HijackedSocket {
  constructor() {
    this.socket = null;
    this.fd = -1;
    this.input = '';        // arrived, not read yet
    this.ended = false;     // the client sent its last byte (or the socket failed)
    this.broken = false;    // no more writes can go (the client is gone, or never came)
    this.waiting = [];      // Buffers written before attach
    this.ending = false;    // closeWrite asked for before attach
    this.closed = false;    // close asked for
    this.readClosed = false;
    this.onReadable = null; // function() the Ruby side gives
    this.onAttach = null;   // function() once the socket came (a partial hijack's callable)
  }

  // The addon's answer: fd, now ours, with the bytes the client sent after the request; or
  // -1 when the client went first.
  attach(fd, unread) {
    if (fd < 0) {
      this.ended = true;
      this.broken = true;
      this.waiting = [];
      this.notify();
      return;
    }
    if (this.closed) {
      fs.closeSync(fd);
      return;
    }
    this.fd = fd;
    this.input += unread;
    const socket = new net.Socket({ fd, readable: true, writable: true, allowHalfOpen: true });
    this.socket = socket;
    socket.on('data', (chunk) => {
      this.input += chunk.toString('latin1');
      if (this.input.length >= MAX_UNREAD) socket.pause();
      this.notify();
    });
    socket.on('end', () => {
      this.ended = true;
      this.notify();
    });
    socket.on('error', () => {
      this.ended = true;
      this.broken = true;
      socket.destroy();
      this.notify();
    });
    socket.on('close', () => {
      this.ended = true;
      this.broken = true;
    });
    for (const chunk of this.waiting) socket.write(chunk);
    this.waiting = [];
    if (this.readClosed) socket.pause();
    if (this.ending) socket.end();
    if (this.onAttach !== null) this.onAttach();
    if (this.input.length > 0 || this.ended) this.notify();
  }

  notify() {
    if (this.onReadable !== null && !this.readClosed && !this.closed) this.onReadable();
  }

  // Sets the callback; runs it at once (on a later tick) when bytes or the end wait already.
  setOnReadable(fn) {
    this.onReadable = fn;
    if (this.input.length > 0 || this.ended) setImmediate(() => this.notify());
  }

  // Up to max (-1: all) of the bytes that arrived; '' when none did yet; null at the end.
  take(max) {
    if (this.input.length === 0) return this.ended ? null : '';
    const n = max < 0 || max > this.input.length ? this.input.length : max;
    const data = this.input.slice(0, n);
    this.input = this.input.slice(n);
    if (this.socket !== null && this.socket.isPaused() && !this.readClosed && this.input.length < MAX_UNREAD) {
      this.socket.resume();
    }
    return data;
  }

  // A whole line (through sep) if one arrived, the rest at the end, else null.
  takeLine(sep) {
    const at = this.input.indexOf(sep);
    if (at >= 0) return this.take(at + sep.length);
    if (this.ended) return this.input.length > 0 ? this.take(-1) : null;
    return null;
  }

  atEnd() {
    return this.ended && this.input.length === 0;
  }

  // part: an Opal String. Returns the bytes queued, or -1 when the socket is gone.
  write(part) {
    if (this.broken) return -1;
    const chunk = Buffer.from(plain(part), isUtf8(part) ? 'utf8' : 'latin1');
    if (this.socket === null) this.waiting.push(chunk);
    else this.socket.write(chunk);
    return chunk.length;
  }

  closeRead() {
    this.readClosed = true;
    this.input = '';
    if (this.socket !== null) this.socket.pause();
  }

  closeWrite() {
    if (this.socket === null) this.ending = true;
    else this.socket.end();
  }

  // The fd closes once what was written is out (or at once when the socket failed).
  close() {
    this.closed = true;
    this.input = '';
    if (this.socket !== null) this.socket.destroySoon();
  }
}

module.exports = { HijackedSocket };
