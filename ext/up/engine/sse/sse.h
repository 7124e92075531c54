#ifndef UP_SSE_H
#define UP_SSE_H

/* Server-Sent Events (the HTML Living Standard, "Server-sent events"): once a request that
 * accepts text/event-stream is answered with a 200 head and no end, the connection carries
 * events. Any thread holding a reference writes them; the loop sends a heartbeat comment when
 * nothing was written for a while (proxies close silent connections) and notices the client
 * leaving. The client sends nothing after its request: what it sends is read and dropped. */

#include <stdint.h>
#include "core/conn.h"
#include "core/exchange.h"
#include "http1/upgrade.h"

#define UP_SSE_DEFAULT_HEARTBEAT_MS 15000
/* Bytes of one event's fields (event name, id): a name with a line break would break framing. */
#define UP_SSE_MAX_FIELD 1024

extern const up_protocol_t up_sse_protocol;

/* The borrower of the request: answers 200 with content-type text/event-stream and
 * cache-control no-cache; the caller adds its own fields (cookies) between start and accept,
 * then the head is sent without an end (the stream ends when the connection does) and the
 * connection carries events; on HTTP/2 the request's stream carries them, as a connection of
 * its own (http2/http2_tunnel.h). heartbeat_ms 0: none. start returns 0, or -1 when the
 * request is not an event-stream request; accept returns the connection the events go to,
 * with a reference for the caller (up_conn_release), or NULL (nothing was written). */
int up_sse_lent_start_accept(up_exchange_t *ex);
up_conn_t *up_sse_lent_accept(up_exchange_t *ex, unsigned heartbeat_ms,
                              const up_upgrade_events_t *events, void *user);

/* Any thread holding a reference: one event. data may hold line breaks (CR, LF or CRLF): each
 * line becomes a data: field. event and id (NULL for none) must not: then -2. Returns 0, -1
 * when the connection is closed or closing, -2 for a field with a line break or NUL (or over
 * UP_SSE_MAX_FIELD). */
int up_sse_any_send(up_conn_t *conn, const char *event, size_t event_len, const char *id,
                    size_t id_len, const char *data, size_t data_len);
/* Closes after what was sent; later sends are refused. Returns 0, or -1 when closed already. */
int up_sse_any_close(up_conn_t *conn);
/* The loop thread: ends the stream behind what is queued (a subscriber too slow). */
void up_sse_loop_close(up_conn_t *conn);
/* Writes since the output was last empty, or -1 once closed or closing; above 0, on_drained is
 * owed (see up_ws_any_pending). */
long up_sse_any_pending(up_conn_t *conn);

#endif
