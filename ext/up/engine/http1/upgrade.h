#ifndef UP_UPGRADE_H
#define UP_UPGRADE_H

/* What an upgraded connection (a WebSocket, websocket.h; an event stream, sse.h) tells the
 * binding that took the upgrade, and what the two share: the kinds of upgrade a request may
 * ask for, the messages handed to the binding, and the writes counted for `pending`. */

#include <stdatomic.h>
#include <stddef.h>

typedef struct up_conn_t up_conn_t;

/* What a request asks to become (rack.upgrade?): decided by the engine from its headers. */
typedef enum up_upgrade_kind_t {
    UP_UPGRADE_NONE,
    UP_UPGRADE_WEBSOCKET, /* a valid RFC 6455 handshake */
    UP_UPGRADE_SSE        /* Accept: text/event-stream */
} up_upgrade_kind_t;

/* One whole WebSocket message, handed to the binding, which frees it (free()). */
typedef struct up_upgrade_message_t {
    size_t len;
    int binary; /* else UTF-8 text, checked */
    char data[];
} up_upgrade_message_t;

/* The binding's callbacks for an upgraded connection: all on the loop thread, in order, none
 * after on_close. user is what the binding gave at the upgrade. Each must be quick: a binding
 * queues the event for its own threads. */
typedef struct up_upgrade_events_t {
    /* The connection speaks its new protocol: writes may begin (none may before this). */
    void (*on_open)(up_conn_t *conn, void *user);
    /* A whole message (WebSocket only); the callee owns msg. */
    void (*on_message)(up_conn_t *conn, void *user, up_upgrade_message_t *msg);
    /* The output emptied after the binding saw writes pending (up_ws_any_pending > 0). */
    void (*on_drained)(up_conn_t *conn, void *user);
    /* The server begins a graceful stop. NULL: the connection closes at once (WebSocket: 1001
     * Going Away). Otherwise the binding lets its app say goodbye, then closes it itself
     * (up_ws_any_close, up_sse_any_close); the stop's deadline closes it anyway. */
    void (*on_shutdown)(up_conn_t *conn, void *user);
    /* The connection closed: code is the WebSocket close code received or sent (1006 when the
     * connection ended without a Close), 0 for an event stream. */
    void (*on_close)(up_conn_t *conn, void *user, unsigned code);
} up_upgrade_events_t;

/* Writes since the output was last empty: what a client's `pending` reports. Incremented by the
 * writing thread, taken back to 0 by the loop when the output drains. */
typedef atomic_uint up_upgrade_pending_t;

#endif
