#ifndef UP_CONN_H
#define UP_CONN_H

/* One client connection: a socket behind a transport (transport.h), a read buffer, an output
 * queue (outq.h), one timer, and the protocol that gives its bytes meaning (protocol.h). The
 * connection reads when its protocol wants input, writes what is queued whenever the socket
 * takes it, and closes; the protocol decides everything else.
 *
 * Threads. The loop thread owns a connection. A protocol may lend the current exchange to
 * another thread (the binding's app thread) with up_conn_lend; that thread then produces
 * output into conn->_staged, hands it over with up_conn_post (the loop writes it as soon as it
 * can, never that thread), may wait for the backlog to shrink with up_conn_wait_backlog, and
 * gives the exchange back with up_conn_resume. A lent connection is never freed: a close
 * (client gone, write timeout, forced stop) only marks it broken, wakes its waiters and
 * happens when it is given back.
 *
 * Fields starting with '_' belong to the engine. */

#include <netinet/in.h>
#include <stdatomic.h>
#include <stdint.h>
#include "buffer.h"
#include "http1.h"
#include "loop.h"
#include "outq.h"
#include "protocol.h"
#include "server.h"
#include "timer.h"
#include "transport.h"

struct up_conn_t {
    up_watcher_t _watcher; /* first: the loop hands it back to conn_on_event */
    up_server_t *server;
    const up_listener_t *listener; /* NULL when handed over otherwise; kept as long as server */
    const up_transport_t *transport;
    void *transport_data; /* the transport's own state (TLS), NULL for TCP */
    const up_protocol_t *protocol;
    void *protocol_data;  /* state of a protocol other than HTTP/1 */
    void *user;           /* the binding's, untouched by the engine */
    char remote_addr[INET6_ADDRSTRLEN];
    /* The client is gone (a write failed or timed out, or a forced stop): producers stop. Read
     * by any thread. */
    atomic_int broken;
    int eof; /* the client finished sending */

    /* The HTTP/1 exchange under way, while protocol is up_http1_protocol: the request handed
     * to the binding, and the response writer's state (response.h). NULL between requests. */
    up_request_t *req;
    up_response_state_t *res;
    up_http1_t _h1;

    up_buffer_t _rbuf; /* bytes read; the protocol consumes them from _rpos */
    size_t _rpos;
    up_outq_t _staged; /* output being produced by whichever thread has the exchange */
    up_outq_t _posted; /* handed over by another thread; under server->post_lock */
    up_outq_t _out;    /* being written; loop thread only */
    /* Bytes in _posted and _out, for producers that wait on any thread. */
    _Atomic uint64_t _backlog;
    up_timer_t _timer;
    uint32_t _lingered;   /* bytes a lingering close dropped (UP_LINGER_MAX_BYTES) */
    int _timer_kind;      /* the up_timer_kind_t _timer is armed for */
    int _proto_timer;     /* the kind the protocol asked for when no output is pending */
    unsigned _want_read : 1;
    unsigned _lent : 1;          /* another thread has the exchange */
    unsigned _close_when_back : 1; /* closed while lent: close once it is given back */
    unsigned _closing : 1;       /* close once the output is written */
    unsigned _lingering : 1;     /* sending side shut down: reading and dropping until close */
    unsigned _closed : 1;
    /* Under server->post_lock (kept out of the bit-fields the loop writes without it). */
    unsigned char _on_post_list, _resume_posted, _post_closed, _free_when_popped;
    int _backlog_waiters;
    up_conn_t *_post_next; /* server->post_head */
    up_conn_t *_prev, *_next; /* server->conns */
};

/* ---- loop thread ---------------------------------------------------------------------- */

/* Takes a freshly accepted, non-blocking socket as a plain TCP connection speaking HTTP/1.
 * Returns the connection (it may already be closed if the first read failed). */
up_conn_t *up_conn_accept(up_server_t *server, const up_listener_t *listener, int fd,
                          const struct sockaddr *addr);
/* Closes at once, whatever is queued (or, when lent, as soon as it is given back). The memory
 * is freed later in the loop iteration, so conn stays readable until the callback returns. */
void up_conn_close(up_conn_t *conn);
/* Closes after everything queued is written, with a lingering close: the sending side is shut
 * down and input drained for a while, so the client reads the last response rather than a
 * reset caused by bytes it sent that were never read. */
void up_conn_close_after_output(up_conn_t *conn);
/* Whether the protocol wants the connection's input now. */
void up_conn_want_read(up_conn_t *conn, int on);
/* The timer the protocol wants while no output is pending (UP_TIMER_NONE to stop it). */
void up_conn_set_timer(up_conn_t *conn, up_timer_kind_t kind);
/* Moves what the loop thread staged behind what is queued (the exchange is not lent). */
void up_conn_commit_staged(up_conn_t *conn);
/* The same, then writes what the socket takes now and watches for the rest. */
void up_conn_flush(up_conn_t *conn);
/* After a protocol acted outside an event of this connection: write, then watch for what
 * comes next. */
void up_conn_update(up_conn_t *conn);
/* From the next byte on, conn speaks protocol (data: its protocol_data), reading, with no
 * timer until it sets one. Bytes already read and not consumed (conn->_rbuf from _rpos) go to
 * the new protocol's on_read. The old protocol has let go of what it held (HTTP/1 does this
 * through up_http1_switch_protocol, at the end of a response). Loop owner only. */
void up_conn_switch_protocol(up_conn_t *conn, const up_protocol_t *protocol, void *data);
/* Lends the exchange (to the binding, which may pass it to another thread) until
 * up_conn_resume or up_conn_give_back. */
void up_conn_lend(up_conn_t *conn);
/* Takes a lent exchange back on the loop thread. Returns 0, or -1 when the connection was
 * closed meanwhile (and is now). */
int up_conn_give_back(up_conn_t *conn);
/* The server's wake-up: takes what other threads posted and handed back. */
void up_conn_take_posted(up_server_t *server);
/* The loop's timer check: conn's timer expired. */
void up_conn_on_timeout(up_conn_t *conn);

/* ---- whichever thread has the exchange ------------------------------------------------ */

/* Hands conn->_staged to the loop to be written as soon as the socket takes it; on the loop
 * thread it is written at once. Returns 0, or -1 when the client is gone. */
int up_conn_send(up_conn_t *conn);
/* Hands conn->_staged to the loop for its next turn, without waking it: for a thread that
 * will run a turn itself if it can (the hand-over orders this thread's output before another
 * thread stages more). Returns 1 when the loop must be woken (up_loop_wake) if the caller
 * runs no turn, 0 when a wake-up is on its way or not needed, -1 when the connection is closed
 * (nothing was posted). A broken connection is posted to all the same (its exchange is still
 * lent): the caller reads conn->broken to stop producing. */
int up_conn_post(up_conn_t *conn);
/* Gives a lent exchange back to the loop thread (with whatever is still staged). */
void up_conn_resume(up_conn_t *conn);
/* The same, done at once by a thread that may run the loop now (it holds the binding's loop
 * lock): no post list, no wake-up. */
void up_conn_resume_here(up_conn_t *conn);
/* Bytes handed over and not yet written. Any thread. */
uint64_t up_conn_backlog(up_conn_t *conn);
/* Waits until at most max_bytes are handed over and unwritten, or *cancel is set (then call
 * up_conn_cancel_wait to wake the waiter). Only a thread the exchange is lent to (it blocks; a
 * binding calls it without its interpreter lock). Returns 0, or -1 when the client is gone. */
int up_conn_wait_backlog(up_conn_t *conn, uint64_t max_bytes, const atomic_int *cancel);
void up_conn_cancel_wait(up_conn_t *conn);

/* A producer past this many unwritten bytes should wait for them to drain (back-pressure). */
#define UP_CONN_BACKLOG_LIMIT (256 * 1024)
/* Bytes written to one connection per loop event, so one fast client cannot starve others. */
#define UP_CONN_MAX_WRITE_PER_EVENT (1024 * 1024)

#endif
