#ifndef UP_WEBSOCKET_H
#define UP_WEBSOCKET_H

/* The WebSocket protocol of a connection (RFC 6455), once a request was answered with 101: reads
 * frames (websocket_frame.h), assembles messages and checks them (UTF-8 for text, across
 * fragments; the size limit), answers pings, runs the close handshake, pings an idle client,
 * and hands whole messages to the binding (upgrade.h). Any thread holding a reference to the
 * connection writes messages to it and may close it; the loop writes what they post in order.
 *
 * Close codes, decided in one place each: the frame reader's (1002 malformed, 1009 too big),
 * 1007 for text that is not UTF-8, the client's own code echoed when it closes, 1001 when the
 * server stops or an idle client does not answer a ping, the app's code when it closes. */

#include <pthread.h>
#include <stdint.h>
#include "base/utf8.h"
#include "core/conn.h"
#include "core/exchange.h"
#include "core/outq.h"
#include "http1/upgrade.h"
#include "http1/websocket_handshake.h"
#include "websocket/websocket_frame.h"

typedef struct up_ws_compressors_t up_ws_compressors_t;

typedef struct up_ws_settings_t {
    uint64_t max_message; /* bytes of a message, all frames: past it, close 1009 (0: no limit) */
    unsigned ping_ms;     /* idle this long: ping; idle as long again: close 1001 (0: never) */
    /* permessage-deflate (RFC 7692) for clients that offer it, when not NULL: compressors
     * shared by the server's connections (up_ws_compressors_new). Every message is then
     * compressed with an empty window (server_no_context_takeover) and clients are asked to do
     * the same (client_no_context_takeover): a connection keeps no zlib stream between
     * messages, so 10,000 of them cost no more memory than without. */
    up_ws_compressors_t *compressors;
} up_ws_settings_t;

typedef struct up_ws_t up_ws_t;

#define UP_WS_DEFAULT_MAX_MESSAGE (16 * 1024 * 1024)
#define UP_WS_DEFAULT_PING_MS 40000
/* Message bytes handed to the binding and not yet consumed (up_ws_any_consumed) past which the
 * connection stops reading: a client cannot queue more work than this for a slow app. */
#define UP_WS_MAX_INBOUND (1024 * 1024)

extern const up_protocol_t up_websocket_protocol;

/* ---- the request that upgrades (the borrower of its exchange) ---------------------------- */

/* Answers the lent request with 101 Switching Protocols and makes the connection a WebSocket
 * once that is written; on HTTP/2 (RFC 8441's extended CONNECT) a 200 makes the stream one,
 * carried as a connection of its own (http2/http2_tunnel.h). start writes the head's own
 * fields (the accept key, a negotiated permessage-deflate) and returns the WebSocket state, or
 * NULL when the request is not a valid handshake (nothing was written); the caller may then
 * add its own fields (cookies, the chosen Sec-WebSocket-Protocol) with up_response_add_header,
 * and ends with accept (events and user are the binding's, upgrade.h) or, when it gives up,
 * discard. accept returns the connection the WebSocket lives on, with a reference for the
 * caller (up_conn_release), which every up_ws_any_* call takes; or NULL, and ws is gone.
 * settings are copied. */
up_ws_t *up_ws_lent_start_accept(up_exchange_t *ex, const up_ws_settings_t *settings);
up_conn_t *up_ws_lent_accept(up_exchange_t *ex, up_ws_t *ws, const up_upgrade_events_t *events,
                             void *user);
void up_ws_discard(up_ws_t *ws);

/* ---- compressors -------------------------------------------------------------------------- */

/* A server's zlib compressors for permessage-deflate, lent to one thread at a time. Any
 * thread. */
up_ws_compressors_t *up_ws_compressors_new(void);
void up_ws_compressors_free(up_ws_compressors_t *pool);
/* Whether conn negotiated permessage-deflate with a window that takes a message compressed by
 * up_ws_compress at 15 bits (a broadcast's shared compressed frame). Loop thread. */
int up_ws_loop_takes_shared_deflate(up_conn_t *conn);

/* ---- any thread holding a reference ------------------------------------------------------ */

/* Sends one message: opcode UP_WS_OP_TEXT (data must be UTF-8: the caller checks) or
 * UP_WS_OP_BINARY; data is copied. Returns 0, or -1 when the connection is closed or closing. */
int up_ws_any_send(up_conn_t *conn, int opcode, const char *data, size_t len);
/* The same with the payload referenced, not copied (a large String). */
int up_ws_any_send_shared(up_conn_t *conn, int opcode, up_shared_t *payload, size_t offset,
                          size_t len);
/* Starts the close handshake with code (a valid close code, else 1000) after what was sent
 * before; later sends are refused. Returns 0, or -1 when closed already. */
int up_ws_any_close(up_conn_t *conn, unsigned code);
/* Writes since the output was last empty, or -1 once the connection is closed or closing (a
 * close was asked for). A value above 0 makes the binding's on_drained owed: it comes once the
 * output is empty (the Iodine rule: no on_drained for an app that never asked). */
long up_ws_any_pending(up_conn_t *conn);
/* The binding is done with len bytes of messages it was handed: reading resumes if it had
 * stopped for UP_WS_MAX_INBOUND. */
void up_ws_any_consumed(up_conn_t *conn, size_t len);
/* The idle timeout (settings.ping_ms) of this connection from now on. */
void up_ws_any_set_ping(up_conn_t *conn, unsigned ping_ms);
unsigned up_ws_any_ping(up_conn_t *conn);

/* ---- the loop thread ---------------------------------------------------------------------- */

/* Closes with code and reason (a static string) behind what is queued (a subscriber too slow). */
void up_ws_loop_close(up_conn_t *conn, unsigned code, const char *reason);

#endif
