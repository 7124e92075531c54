#ifndef UP_CONN_H
#define UP_CONN_H

/* One client connection: a socket behind a transport (transport.h), a read buffer, an output
 * queue (outq.h), one timer, and the protocol that gives its bytes meaning (protocol.h). The
 * connection reads when its protocol wants input, writes what is queued whenever the socket
 * takes it, and closes; the protocol decides everything else. It knows no protocol's types:
 * the requests it carries are exchanges (exchange.h) that its protocol creates (HTTP/1: one
 * at a time, kept in the protocol's per-connection state, up_conn_protocol_state) and lends to
 * the binding, each pointing back at the connection (ex->conn). What the connection tracks is
 * whether one is lent (LENT below), not which.
 *
 * ---- Lifecycle ------------------------------------------------------------------------------
 *
 * One state at a time (up_conn_state_t), moved by the loop thread alone:
 *
 *   accept ──▶ OPEN ───── lend (an exchange to the binding) ───▶ LENT ── hijack ──▶ LENT_HIJACKING
 *               │ ▲                                               │ │                       │    │
 *               │ └────── reclaim (the borrower returned it) ─────┘ │ ◀─────── close ───────┘    │
 *               │                                                   │ (client gone, write        │
 *               │ close_after_output                                │ timeout, a stop's   output │
 *               ▼                                                   ▼ deadline)          written ▼
 *           FLUSHING ── output written ──▶ LINGERING           LENT_BROKEN                 HIJACKED
 *               │     (sending side shut)      │ client ends,       │ reclaim: what   (the socket
 *               │                              │ sends too much,    │ the borrower    is the app's)
 *               │                              │ or a timer         │ staged last goes out
 *               │                              │                    │ if the socket takes it
 *               └─────────── close ────────────┴────────────────────┴──▶ CLOSED
 *
 * OPEN and LENT read when the protocol wants input (up_conn_loop_want_read); FLUSHING reads
 * nothing and writes what is queued; LINGERING reads and drops (a lingering close, so the
 * client reads our last response before any reset). A close from OPEN, FLUSHING or LINGERING
 * is CLOSED at once: the socket is closed and the protocol's on_close runs. CLOSED memory is
 * freed once the backend has let go of the watcher AND the last reference is released
 * (up_conn_retain): handles other threads keep (a WebSocket client object, a subscriber list)
 * stay valid after the close, and every operation on a closed connection is a harmless no-op
 * that reports it.
 *
 * Hijack (Rack's rack.hijack, and an upgrade whose new protocol the app speaks itself on the
 * raw socket): the borrower asks for the socket (up_conn_lent_hijack). LENT_HIJACKING reads
 * nothing and writes what was queued before the request (a partial hijack's response head must
 * be on the wire before the app writes to the socket); once it is all written the loop forgets
 * the socket without closing it, and the connection is HIJACKED: no longer watched, timed,
 * counted (up_server_num_conns: a graceful stop does not wait for it), nor in server->conns.
 * The borrower takes the fd (up_conn_lent_take_socket) and owns it. The exchange stays lent
 * until the borrower returns it as usual; then the protocol lets go of the request
 * (on_close), and HIJACKED is final like CLOSED: memory goes with the last reference. A client
 * gone or a write timeout before the hand-over is a close while lent (LENT_BROKEN): the
 * borrower gets no socket, and the return closes it. Bytes the client sent after the request
 * are the borrower's too (up_http1_lent_unread, given the exchange): they arrived on the socket
 * it now owns.
 *
 * ---- Threads --------------------------------------------------------------------------------
 *
 * Every function's name says who may call it:
 *   up_conn_loop_*   the loop thread (the one that runs the loop now: loop.h);
 *   up_conn_lent_*   the thread a request is lent to, while the state is LENT, LENT_BROKEN,
 *                    LENT_HIJACKING or HIJACKED (the "borrower": the binding's app thread).
 *                    It alone produces output into conn->_staged until it returns the
 *                    exchange;
 *   up_conn_any_*    any thread, at any time, any state (a closed connection refuses politely),
 *                    holding a reference (up_conn_retain) for as long as it uses the
 *                    connection: the loop frees a closed one once no reference is left. (The
 *                    borrower of a lent exchange needs none: a lent connection is not freed.)
 *
 * Other threads never touch the loop's data. They hand things to the loop through the
 * connection's mail: output bytes (in the order posted), "the exchange is returned", "please
 * close". Mail is guarded by the connection's own lock (held only to splice a queue or set a
 * flag), and a connection with mail is pushed on the server's lock-free mail list, which the
 * loop takes whole when woken (up_conn_loop_take_mail). A producer that must wait for its
 * output to drain (back-pressure) waits on a waiter of its own on that connection, woken when
 * that connection's backlog falls, not when any connection's does.
 *
 * ---- Transport -------------------------------------------------------------------------------
 *
 * The connection moves bytes through its listener's transport (transport.h), never a socket
 * call of its own, and keeps the transport's side of the bargain: after every event, whatever
 * it was, it writes what is queued and then has the transport flush what it buffered
 * (_unflushed while bytes are left: the write timer runs and writability is watched, and a
 * FLUSHING connection lingers only once its transport sent everything, a TLS close_notify
 * included); it reads again while the transport holds input (pending), up to
 * UP_CONN_MAX_READ_PER_EVENT, and a read it could not do at once (the connection did not want
 * input then, or the budget ran out) is done at the end of the wake-up
 * (up_conn_loop_run_deferred_reads); the watched events are what the transport makes of the
 * wanted ones; and while the transport handshakes, the head timer runs and its expiry closes.
 *
 * Fields starting with '_' belong to the engine; the rest are the protocol's and binding's. */

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buffer.h"
#include "core/context.h"
#include "core/listener.h"
#include "core/outq.h"
#include "core/protocol.h"
#include "core/transport.h"
#include "loop/loop.h"
#include "loop/timer.h"

typedef enum up_conn_state_t {
    UP_CONN_OPEN,        /* the loop's: reading and writing as the protocol wants */
    UP_CONN_LENT,        /* a request is lent to another thread until it returns it */
    UP_CONN_LENT_BROKEN, /* closed while lent: closes for good when it is returned */
    UP_CONN_FLUSHING,    /* no more input wanted: write what is queued, then linger */
    UP_CONN_LINGERING,   /* sending side shut down: reading and dropping input until close */
    UP_CONN_CLOSED,      /* socket closed; memory kept while references remain */
    UP_CONN_LENT_HIJACKING, /* lent, and its borrower asked for the socket: writing what is
                             * queued, then HIJACKED */
    UP_CONN_HIJACKED     /* the socket is the borrower's, forgotten by the loop (final) */
} up_conn_state_t;

/* Mail flags: what other threads asked of the loop besides output (under _mail_lock). */
#define UP_CONN_MAIL_RETURNED 1u /* the borrower returned the exchange */
#define UP_CONN_MAIL_CLOSE 2u    /* close after what is queued (the protocol's way) */
#define UP_CONN_MAIL_NOTIFY 4u   /* the protocol has news from another thread (on_notify) */
#define UP_CONN_MAIL_HIJACK 8u   /* the borrower asks for the socket (up_conn_lent_hijack) */

/* A thread waiting for a connection's backlog to shrink (up_conn_any_wait_backlog); lives on
 * the waiter's stack, linked under _mail_lock. */
typedef struct up_conn_waiter_t {
    pthread_cond_t cond;
    uint64_t max_bytes;
    struct up_conn_waiter_t *next;
} up_conn_waiter_t;

struct up_conn_t {
    up_watcher_t _watcher; /* first: the loop hands it back to conn_on_event */
    up_context_t *server;
    const up_listener_t *listener; /* kept as long as the server (listener.h) */
    const up_transport_t *transport;
    void *transport_data; /* the transport's own state (TLS), NULL for TCP */
    const up_protocol_t *protocol;
    void *protocol_data;  /* state of a protocol it switched to (up_conn_loop_switch_protocol) */
    void *user;           /* the binding's, untouched by the engine */
    char remote_addr[INET6_ADDRSTRLEN];
    int eof; /* the client finished sending; loop thread */

    /* up_conn_state_t; written by the loop thread only, read by any (up_conn_any_state). */
    _Atomic int _state;
    atomic_uint _refs; /* the loop's reference while not CLOSED, plus up_conn_retain's */

    up_buffer_t _rbuf; /* bytes read; the protocol consumes them from _rpos */
    size_t _rpos;
    up_outq_t _staged; /* output a thread produces before handing it over (see threads) */
    up_outq_t _out;    /* being written; loop thread only */
    /* Bytes handed to the loop (mail and _out) and not written yet: what back-pressure
     * measures. Any thread reads it. */
    _Atomic uint64_t _backlog;

    /* The mail (see threads): what other threads hand the loop, under _mail_lock. */
    pthread_mutex_t _mail_lock;
    up_outq_t _mail;
    unsigned _mail_flags;
    up_conn_waiter_t *_waiters;
    atomic_int _num_waiters;     /* so the loop looks at _waiters only when someone waits */
    atomic_int _listed;          /* on the server's mail list (which holds a reference) */
    up_conn_t *_mail_next;

    up_timer_t _timer;
    uint32_t _lingered;       /* bytes a lingering close dropped (UP_LINGER_MAX_BYTES) */
    int _timer_kind;          /* the up_timer_kind_t _timer is armed for */
    int _proto_timer;         /* the kind the protocol asked for when no output is pending */
    unsigned _idle_timeout_ms; /* UP_TIMER_IDLE's duration for this connection */
    unsigned _want_read : 1;
    unsigned _deferred : 1;   /* on server->deferred */
    unsigned _unflushed : 1;  /* the transport holds bytes it has not sent (transport.h) */
    unsigned _read_deferred : 1; /* on server->deferred_reads: the transport holds input */
    up_conn_t *_deferred_next;
    up_conn_t *_read_next;
    up_conn_t *_prev, *_next; /* server->conns, while not CLOSED */
};

/* ---- loop thread ------------------------------------------------------------------------- */

/* Takes a freshly accepted, non-blocking socket as a connection speaking protocol over the
 * listener's transport, opened with the listener's context (listener NULL: plain TCP).
 * Returns the connection (it may already be closed if the first read failed), or NULL when
 * the transport could not be set up (the socket is closed and a line logged). */
up_conn_t *up_conn_loop_accept(up_context_t *server, const up_listener_t *listener,
                               const up_protocol_t *protocol, int fd,
                               const struct sockaddr *addr);
/* The conn_state_size bytes (protocol.h) the connection's first protocol keeps for the
 * connection's whole life, allocated with it and zeroed (HTTP/1's bookkeeping: an idle
 * keep-alive connection costs one allocation). Aligned for any type. */
#define UP_CONN_ALIGN _Alignof(max_align_t)
#define UP_CONN_STATE_OFFSET \
    ((sizeof(up_conn_t) + UP_CONN_ALIGN - 1) / UP_CONN_ALIGN * UP_CONN_ALIGN)
static inline void *up_conn_protocol_state(const up_conn_t *conn)
{
    return (char *)conn + UP_CONN_STATE_OFFSET;
}
/* A carried connection: no socket of its own, its bytes carried by another protocol's
 * transport (an HTTP/2 stream holding a WebSocket or an event stream, http2/http2_tunnel.h),
 * so the WebSocket and SSE protocols, pub/sub and the bindings run on it as on a socket. Made
 * by the thread that accepts the upgrade, speaking protocol (data: its protocol_data) once
 * started; it holds two references, the loop's and the caller's. Any thread. */
up_conn_t *up_conn_new_carried(up_context_t *server, const up_listener_t *listener,
                               const up_transport_t *transport, void *transport_data,
                               const char *remote_addr, const up_protocol_t *protocol,
                               void *data);
/* Starts it on the loop: listed and counted as the server's connections are, its protocol's
 * on_start runs, then its output is written and its input read as its transport allows. */
void up_conn_loop_start_carried(up_conn_t *conn);
/* Its maker's undo, before handing it to anyone: freed with its protocol_data (on_free). */
void up_conn_discard_carried(up_conn_t *conn);
/* One that will never start (its stream went first): CLOSED, its protocol's on_close runs
 * (the binding hears of the close), and the loop's reference goes. */
void up_conn_loop_drop_carried(up_conn_t *conn);
/* Closes at once, whatever is queued; when LENT, marks it LENT_BROKEN (the borrower's
 * producers stop, its waiters wake) and closes when it is returned. No-op when CLOSED. */
void up_conn_loop_close(up_conn_t *conn);
/* FLUSHING: closes after everything queued is written, with a lingering close (the sending
 * side is shut down and input drained for a while, so the client reads the last response
 * rather than a reset caused by bytes it sent that were never read). */
void up_conn_loop_close_after_output(up_conn_t *conn);
/* Whether the protocol wants the connection's input now. */
void up_conn_loop_want_read(up_conn_t *conn, int on);
/* The timer the protocol wants while no output is pending (UP_TIMER_NONE to stop it). For
 * UP_TIMER_IDLE, idle_ms is its duration (any value: each distinct one gets a list of its own
 * in the server, see up_server_idle_timers); it restarts on every event of the connection. */
void up_conn_loop_set_timer(up_conn_t *conn, up_timer_kind_t kind);
void up_conn_loop_set_idle_timer(up_conn_t *conn, unsigned idle_ms);
/* Moves what the loop thread staged behind what is queued (the exchange is not lent). */
void up_conn_loop_commit(up_conn_t *conn);
/* The same, then writes what the socket takes now and watches for the rest. */
void up_conn_loop_flush(up_conn_t *conn);
/* After a protocol acted outside an event of this connection: write, then watch for what
 * comes next. */
void up_conn_loop_update(up_conn_t *conn);
/* From the next byte on, conn speaks protocol (data: its protocol_data): its on_start runs,
 * then bytes already read and not consumed (conn->_rbuf from _rpos) go to its on_read. The old protocol has let go of what it held (HTTP/1 does this
 * through up_http1_switch_protocol, at the end of a response). */
void up_conn_loop_switch_protocol(up_conn_t *conn, const up_protocol_t *protocol, void *data);
/* Lends the exchange (to the binding, which may pass it to another thread): OPEN to LENT. */
void up_conn_loop_lend(up_conn_t *conn);
/* Takes a returned exchange back: LENT to OPEN. Returns 0, or -1 when it was LENT_BROKEN
 * (the connection is CLOSED now, after what the borrower staged last was written if the socket
 * took it), LENT_HIJACKING (the borrower gave up waiting for the socket: CLOSED) or HIJACKED
 * (the protocol lets go of the request; the loop's reference goes once the backend has let go
 * of the watcher). */
int up_conn_loop_reclaim(up_conn_t *conn);
/* The server's wake-up: takes every connection's mail (output, returned exchanges, close
 * requests) in the order the connections were posted to. */
void up_conn_loop_take_mail(up_context_t *server);
/* The loop's timer check: conn's timer expired. */
void up_conn_loop_on_timeout(up_conn_t *conn);
/* Closes at once even a lent connection: its borrower is gone for good (the server is being
 * freed, see up_server_free). */
void up_conn_loop_close_abandoned(up_conn_t *conn);
/* Writes conn once, at the end of the loop's wake-up (a fan-out writes many messages to many
 * connections: each is written once, not once per message). Holds a reference meanwhile. */
void up_conn_loop_defer_update(up_conn_t *conn);
void up_conn_loop_run_deferred(up_context_t *server);
/* Reads, for each connection whose transport held input that no event announces (transport.h,
 * pending), what it holds: the loop was woken for them. At a wake-up, before the deferred
 * writes. The drop variant lets go of them unread (the server is being freed). */
void up_conn_loop_run_deferred_reads(up_context_t *server);
void up_conn_loop_drop_deferred_reads(up_context_t *server);
/* Appends a reference to shared bytes to the output of an OPEN connection (a broadcast frame;
 * the loop's own, no mail). Returns 0, or -1 when the connection is not OPEN. */
int up_conn_loop_queue_shared(up_conn_t *conn, up_shared_t *shared, size_t offset, size_t len);
/* Moves the bytes not consumed yet (from _rpos) to the front of _rbuf, for a protocol that
 * keeps no pointers into it across reads (HTTP/1 keeps slices of a request and does its own). */
void up_conn_loop_compact_input(up_conn_t *conn);

/* ---- the borrower (the thread the exchange is lent to) ------------------------------------ */

/* Hands conn->_staged to the loop to be written as soon as the socket takes it; on the loop
 * thread it is written at once. Returns 0, or -1 when the client is gone. */
int up_conn_lent_send(up_conn_t *conn);
/* Hands conn->_staged to the loop for its next turn, without waking it: for a thread that
 * will run a turn itself if it can (the hand-over orders this thread's output before another
 * thread stages more). Returns 1 when the loop must be woken (up_loop_wake) if the caller
 * runs no turn, 0 when a wake-up is on its way or not needed, -1 when the connection is CLOSED
 * (nothing was posted). A LENT_BROKEN connection is posted to all the same: the caller reads
 * up_conn_any_broken to stop producing. */
int up_conn_lent_post(up_conn_t *conn);
/* Returns the exchange to the loop (with whatever is still staged), through the mail. */
void up_conn_lent_return(up_conn_t *conn);
/* The same, done at once by a borrower that runs the loop now (it took the binding's loop
 * lock): no mail, no wake-up. */
void up_conn_lent_return_here(up_conn_t *conn);
/* Whether writing conn's output can wait on nothing but its socket: no file range (a read
 * from a disk) in what the borrower staged or posted, nor in what the loop has yet to write.
 * For a borrower that runs the loop now, as up_conn_lent_return_here's caller. */
int up_conn_lent_output_in_memory(up_conn_t *conn);
/* Asks for the connection's socket (a hijack: see the lifecycle). What this thread staged is
 * posted behind what it posted before, and the loop writes all of it, then hands the socket
 * over: LENT_HIJACKING, then HIJACKED. At most once per exchange, before the borrower returns
 * it; the borrower writes nothing through the engine afterwards (its posts are refused).
 * Returns 1 when the caller must wake the loop unless it runs a turn itself (as
 * up_conn_lent_post), 0 when not, -1 when the client is gone (no socket will come: return the
 * exchange as usual) or when the transport cannot give its socket up (TLS). */
int up_conn_lent_hijack(up_conn_t *conn);
/* After up_conn_lent_hijack: the socket, once HIJACKED. Returns its fd, which the caller owns
 * from now on (it closes it; the engine never touches it again), -1 when the hand-over failed
 * (the client went or the output timed out) or the fd was taken already, or -2 while it is
 * still under way: the caller runs the loop, or waits with up_conn_lent_wait_hijack. A socket
 * never taken is closed when the exchange is returned. */
int up_conn_lent_take_socket(up_conn_t *conn);
/* Blocks until the hand-over is done or has failed (up_conn_lent_take_socket says which), or
 * *cancel is set (then call up_conn_any_cancel_waits). For a borrower that does not run the
 * loop: a binding calls it without its interpreter lock, after waking the loop. */
void up_conn_lent_wait_hijack(up_conn_t *conn, const atomic_int *cancel);

/* ---- any thread --------------------------------------------------------------------------- */

/* References that keep the memory (not the socket) alive; the last release frees a CLOSED
 * connection, on whichever thread releases it. */
void up_conn_retain(up_conn_t *conn);
void up_conn_release(up_conn_t *conn);
up_conn_state_t up_conn_any_state(const up_conn_t *conn);
/* The client is gone or the socket is not ours any more (LENT_BROKEN, CLOSED, HIJACKED):
 * producers stop. */
int up_conn_any_broken(const up_conn_t *conn);
/* Hands *out (output built by this thread: whole frames, events) to the loop, behind what was
 * posted before, and wakes the loop if it needs it. For a connection that is not lent (a
 * WebSocket, an event stream). Returns 0, or -1 when the connection is closed or closing
 * (FLUSHING, LINGERING: its output is final, a WebSocket's Close frame sent) and out was
 * cleared. */
int up_conn_any_post(up_conn_t *conn, up_outq_t *out);
/* Tells the protocol, on the loop thread, that something it shares with other threads changed
 * (on_notify): a binding caught up with input, a timeout was changed. Returns 0, or -1 when
 * closed. */
int up_conn_any_notify(up_conn_t *conn);
/* up_conn_any_notify for the thread running the loop, which takes the mail
 * (up_conn_loop_take_mail) before it lets the loop sleep: no wake-up. */
int up_conn_loop_notify(up_conn_t *conn);
/* Asks the loop to close the connection the protocol's way (on_close_request) after what was
 * posted before. Returns 0, or -1 when it is closed already. */
int up_conn_any_request_close(up_conn_t *conn);
/* Bytes handed over and not yet written. */
uint64_t up_conn_any_backlog(const up_conn_t *conn);
/* Waits until at most max_bytes are handed over and unwritten, or *cancel is set (then call
 * up_conn_any_cancel_waits to wake the waiter): a producer's back-pressure, for the borrower
 * and for threads that post. Blocks: a binding calls it without its interpreter lock. Returns
 * 0, or -1 when the client is gone. */
int up_conn_any_wait_backlog(up_conn_t *conn, uint64_t max_bytes, const atomic_int *cancel);
/* Wakes every thread waiting on conn's backlog (they look at their cancel flags). */
void up_conn_any_cancel_waits(up_conn_t *conn);

/* A producer past this many unwritten bytes should wait for them to drain (back-pressure). */
#define UP_CONN_BACKLOG_LIMIT (256 * 1024)
/* Bytes written to one connection per loop event, so one fast client cannot starve others. */
#define UP_CONN_MAX_WRITE_PER_EVENT (1024 * 1024)
/* Bytes read from one connection per loop event when its transport holds more than one read
 * gives (TLS records): the rest waits for the end of the wake-up. */
#define UP_CONN_MAX_READ_PER_EVENT (256 * 1024)

#endif
