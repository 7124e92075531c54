#ifndef UP_PROTOCOL_H
#define UP_PROTOCOL_H

/* The protocol seam: what a connection speaks. A connection (conn.c) moves bytes and events;
 * its protocol gives them meaning. A connection starts with its listener's protocol (HTTP/1,
 * http1/http1.c); after a response it may switch to another (WebSocket, an SSE stream, a
 * hijacked socket) that gets the connection's bytes and events from then on without passing
 * the HTTP/1 parser again.
 *
 * Every callback but on_free runs on the loop thread, and none but on_free may be NULL. */

typedef struct up_conn_t up_conn_t;

#include <stddef.h>

typedef struct up_protocol_t {
    const char *name;
    /* Bytes of state kept with every connection that starts with this protocol, for its whole
     * life (up_conn_protocol_state); 0 for a protocol only switched to. */
    size_t conn_state_size;
    /* The ALPN names (RFC 7301 §3.1 wire format, most preferred first) a TLS listener of this
     * protocol answers with; NULL for http/1.1 alone. */
    const unsigned char *alpn;
    size_t alpn_len;
    /* New bytes are in conn->_rbuf from conn->_rpos, or conn->eof is newly set. The protocol
     * moves _rpos past what it has consumed. The connection reads while the protocol wants
     * input (up_conn_loop_want_read) and grows _rbuf when it is full: a protocol that cannot take
     * more yet must stop wanting input, or a client could make the server buffer without
     * bound. Likewise it arms its own timer (up_conn_loop_set_timer): a connection has none after
     * a switch. */
    void (*on_read)(up_conn_t *conn);
    /* The connection speaks this protocol from now on (up_conn_loop_switch_protocol, on the
     * loop thread, before any on_read): input is wanted and no timer is set until this sets
     * one. */
    void (*on_start)(up_conn_t *conn);
    /* The output queue became empty: a producer that was told to wait may go on. */
    void (*on_drained)(up_conn_t *conn);
    /* A thread that had the connection (up_conn_lent_return) handed it back. */
    void (*on_resume)(up_conn_t *conn);
    /* The timer the protocol armed with up_conn_set_timer expired. */
    void (*on_timeout)(up_conn_t *conn);
    /* The server begins a graceful stop: finish what is under way, then close. */
    void (*on_stop)(up_conn_t *conn);
    /* Another thread asked for a close (up_conn_any_request_close), behind what it posted:
     * close the protocol's way (a WebSocket's close handshake). */
    void (*on_close_request)(up_conn_t *conn);
    /* Another thread called up_conn_any_notify: look at what the protocol shares with it. */
    void (*on_notify)(up_conn_t *conn);
    /* The connection is being closed, for whatever reason: release what the protocol holds
     * for the loop. No callback follows but on_free. */
    void (*on_close)(up_conn_t *conn);
    /* May be NULL. The last reference to the connection is gone (conn.h): free protocol_data,
     * which other threads holding references may use until then. Any thread. */
    void (*on_free)(up_conn_t *conn);
} up_protocol_t;

#endif
