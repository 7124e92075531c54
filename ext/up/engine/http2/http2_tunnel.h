#ifndef UP_HTTP2_TUNNEL_H
#define UP_HTTP2_TUNNEL_H

/* An HTTP/2 stream that carries a long-lived protocol once its 200 head is sent: a WebSocket
 * (RFC 8441's extended CONNECT) or an event stream. The stream becomes a carried connection
 * (conn.h) whose transport is the stream itself: what the connection writes goes out as the
 * stream's DATA, the stream's DATA is what it reads, its end is the stream's END_STREAM and an
 * abrupt close resets the stream alone. So the WebSocket and SSE protocols, pub/sub and both
 * bindings run on it unchanged, with HTTP/1's bounds per stream: UP_CONN_BACKLOG_LIMIT of
 * output, and a receive window that reopens only as the protocol reads (a WebSocket stops
 * reading while UP_WS_MAX_INBOUND is with the app), so a client that floods one stream holds
 * that stream, never the connection's other streams.
 *
 * http2.c keeps the stream and this file the carried connection's side; they meet through the
 * calls below, all on the loop thread but up_http2_lent_tunnel. */

#include "core/conn.h"
#include "core/exchange.h"
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Bytes of a stream's output framed into DATA at most ahead of the client's reading: past it
 * the carried connection's own output queue holds the rest, and its back-pressure applies. */
#define UP_HTTP2_TUNNEL_OUTPUT (64 * 1024)

typedef struct up_http2_tunnel_t up_http2_tunnel_t;

/* The borrower of an HTTP/2 exchange whose head it wrote (200, no length) and did not finish:
 * the stream will carry protocol (data: its protocol_data), started once the head is
 * submitted. Returns the carried connection with a reference for the caller, or NULL when the
 * exchange is not an HTTP/2 stream or the engine has no HTTP/2. Defined in http2.c. */
up_conn_t *up_http2_lent_tunnel(up_exchange_t *ex, const up_protocol_t *protocol, void *data);

/* ---- http2.c's calls (the stream's side) ------------------------------------------------- */

up_http2_tunnel_t *up_http2_tunnel_new(up_exchange_t *ex, void *stream,
                                       const up_protocol_t *protocol, void *data);
up_conn_t *up_http2_tunnel_conn(up_http2_tunnel_t *t);
/* Undoes up_http2_tunnel_new before anyone else saw it (the stream went meanwhile). */
void up_http2_tunnel_discard(up_http2_tunnel_t *t);
/* The head went out: the carried connection starts. */
void up_http2_tunnel_start(up_http2_tunnel_t *t);
/* DATA for it (the connection's window was reopened for it already), and END_STREAM. */
void up_http2_tunnel_on_data(up_http2_tunnel_t *t, const uint8_t *data, size_t len);
void up_http2_tunnel_on_end(up_http2_tunnel_t *t);
/* The session framed some of its output: it may write more. */
void up_http2_tunnel_on_taken(up_http2_tunnel_t *t);
/* The stream closed (both ends, or reset; inside the session's callbacks): the tunnel lets go
 * of it, and the carried connection closes at the end of the loop's turn, or never starts.
 * The close variant is for a session closing (outside its callbacks): it closes at once. */
void up_http2_tunnel_on_gone(up_http2_tunnel_t *t);
void up_http2_tunnel_close(up_http2_tunnel_t *t);

/* ---- the tunnel's calls into http2.c (stream: what up_http2_tunnel_new was given) --------- */

/* Appends up to max bytes of iov to the stream's output and has the session frame them.
 * Returns the bytes taken, or -1 when the stream is gone. */
ssize_t up_http2_stream_append(void *stream, const struct iovec *iov, int iovcnt, size_t max);
/* Bytes appended and not framed yet. */
uint64_t up_http2_stream_unframed(void *stream);
/* The carried connection read n bytes: the stream's window reopens for them. */
void up_http2_stream_consume(void *stream, size_t n);
/* The carried connection's output ended: END_STREAM once it is framed. */
void up_http2_stream_end(void *stream);
/* The carried connection closed while its stream is open: RST_STREAM CANCEL. The stream forgets
 * the tunnel. */
void up_http2_stream_detach(void *stream);

#endif
