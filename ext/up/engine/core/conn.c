/* Connections: reading when the protocol wants input, writing the output queue whenever the
 * socket takes it, timers, the lifecycle states, closing, and the mail by which other threads
 * hand output, lent exchanges and close requests to the loop. What the bytes mean is the
 * protocol's. See conn.h for the states and who calls what. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/address.h"
#include "base/memory.h"
#include "core/conn.h"

static void conn_on_event(up_watcher_t *w, unsigned revents);
static int write_out(up_conn_t *conn);

/* Watches conn for events: through the loop, or through the transport when it has no socket
 * of its own (a carried connection, transport.h's watch). */
static int watch(up_conn_t *conn, unsigned events)
{
    if (conn->transport->watch != NULL) {
        conn->_watcher.events = events;
        conn->transport->watch(conn, events);
        return 0;
    }
    return up_loop_watch(conn->server->loop, &conn->_watcher, events);
}

/* ---------------------------------------------------------------- state */

static up_conn_state_t state_of(const up_conn_t *conn)
{
    return (up_conn_state_t)atomic_load_explicit(&conn->_state, memory_order_acquire);
}

/* Loop thread only. A move to LENT_BROKEN or CLOSED is made under _mail_lock (see close), so
 * that a thread posting sees either the open connection or the closed one. */
static void set_state(up_conn_t *conn, up_conn_state_t state)
{
    atomic_store_explicit(&conn->_state, (int)state, memory_order_release);
}

static int is_broken(up_conn_state_t state)
{
    return state == UP_CONN_LENT_BROKEN || state == UP_CONN_CLOSED || state == UP_CONN_HIJACKED;
}

/* Done with, for the loop: the socket is closed or handed over (conn.h). */
static int is_final(up_conn_state_t state)
{
    return state == UP_CONN_CLOSED || state == UP_CONN_HIJACKED;
}

/* A borrower has the exchange and the loop only writes what it is handed. */
static int is_lent(up_conn_state_t state)
{
    return state == UP_CONN_LENT || state == UP_CONN_LENT_HIJACKING;
}

up_conn_state_t up_conn_any_state(const up_conn_t *conn)
{
    return state_of(conn);
}

int up_conn_any_broken(const up_conn_t *conn)
{
    return is_broken(state_of(conn));
}

/* ---------------------------------------------------------------- life and memory */

up_conn_t *up_conn_loop_accept(up_context_t *server, const up_listener_t *listener,
                               const up_protocol_t *protocol, int fd,
                               const struct sockaddr *addr)
{
    up_conn_t *conn = up_calloc(1, UP_CONN_STATE_OFFSET + protocol->conn_state_size);
    conn->_watcher.fd = fd;
    conn->_watcher.cb = conn_on_event;
    conn->server = server;
    conn->listener = listener;
    conn->transport = listener != NULL ? listener->transport : &up_transport_tcp;
    if (conn->transport->open(conn, listener != NULL ? listener->transport_ctx : NULL) != 0) {
        if (server->handler.on_log != NULL)
            server->handler.on_log("cannot set up a connection's transport: closed at once",
                                   server->handler.user);
        close(fd);
        free(conn);
        return NULL;
    }
    conn->protocol = protocol;
    atomic_init(&conn->_state, UP_CONN_OPEN);
    atomic_init(&conn->_refs, 1); /* the loop's, until the backend lets go of the watcher */
    pthread_mutex_init(&conn->_mail_lock, NULL);
    up_server_retain(server);
    unsigned port;
    up_format_address(addr, conn->remote_addr, sizeof(conn->remote_addr), &port, 0);
    conn->_next = server->conns;
    if (server->conns != NULL)
        server->conns->_prev = conn;
    server->conns = conn;
    server->num_conns++;
    protocol->on_start(conn);
    /* The listener defers accept until data arrives, so the first request is usually here
     * already: read it now rather than after another trip through the loop. */
    conn_on_event(&conn->_watcher, UP_EV_READ);
    return conn;
}

static void conn_free(up_conn_t *conn)
{
    up_context_t *server = conn->server;
    if (conn->protocol->on_free != NULL)
        conn->protocol->on_free(conn);
    up_buffer_pool_t *pool = &server->pool;
    up_outq_clear(&conn->_staged, pool);
    up_outq_clear(&conn->_mail, pool);
    up_outq_clear(&conn->_out, pool);
    up_buffer_release(&conn->_rbuf, pool);
    pthread_mutex_destroy(&conn->_mail_lock);
    free(conn);
    up_server_release(server);
}

void up_conn_retain(up_conn_t *conn)
{
    atomic_fetch_add_explicit(&conn->_refs, 1, memory_order_relaxed);
}

void up_conn_release(up_conn_t *conn)
{
    if (atomic_fetch_sub_explicit(&conn->_refs, 1, memory_order_acq_rel) == 1)
        conn_free(conn);
}

/* The backend let go of the watcher: the loop's reference goes. */
static void conn_on_closed(up_watcher_t *w, unsigned revents)
{
    (void)revents;
    up_conn_release((up_conn_t *)w);
}

/* Wakes the threads waiting on conn's backlog whose bound it now meets. */
static void wake_waiters(up_conn_t *conn)
{
    if (atomic_load(&conn->_num_waiters) == 0)
        return;
    pthread_mutex_lock(&conn->_mail_lock);
    uint64_t backlog = atomic_load(&conn->_backlog);
    for (up_conn_waiter_t *w = conn->_waiters; w != NULL; w = w->next) {
        if (backlog <= w->max_bytes)
            pthread_cond_signal(&w->cond);
    }
    pthread_mutex_unlock(&conn->_mail_lock);
}

/* Takes conn off the server's list of open connections. */
static void unlink_conn(up_conn_t *conn)
{
    up_context_t *server = conn->server;
    if (conn->_prev != NULL)
        conn->_prev->_next = conn->_next;
    else
        server->conns = conn->_next;
    if (conn->_next != NULL)
        conn->_next->_prev = conn->_prev;
    conn->_prev = conn->_next = NULL;
    server->num_conns--;
}

/* Moves to a state that changes what posters may do, under the mail lock (posters see it). */
static void set_locked_state(up_conn_t *conn, up_conn_state_t state)
{
    pthread_mutex_lock(&conn->_mail_lock);
    set_state(conn, state);
    pthread_mutex_unlock(&conn->_mail_lock);
}

/* Moves to a broken state under the mail lock (posters see it), waking every waiter. */
static void break_locked_state(up_conn_t *conn, up_conn_state_t state)
{
    pthread_mutex_lock(&conn->_mail_lock);
    set_state(conn, state);
    for (up_conn_waiter_t *w = conn->_waiters; w != NULL; w = w->next)
        pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&conn->_mail_lock);
}

void up_conn_loop_close(up_conn_t *conn)
{
    up_context_t *server = conn->server;
    up_conn_state_t state = state_of(conn);
    if (is_broken(state))
        return; /* closed, closing when returned, or the socket is not ours any more */
    if (is_lent(state)) {
        /* The borrower still reads the request and writes the response: stop it producing,
         * and close when it returns the exchange. */
        break_locked_state(conn, UP_CONN_LENT_BROKEN);
        watch(conn, 0);
        up_timer_disarm(&conn->_timer);
        conn->_timer_kind = UP_TIMER_NONE;
        return;
    }
    break_locked_state(conn, UP_CONN_CLOSED);
    conn->protocol->on_close(conn);
    up_timer_disarm(&conn->_timer);
    if (conn->transport->watch != NULL)
        watch(conn, 0); /* the backend never watched it: it must not try to stop that */
    up_loop_close_watcher(server->loop, &conn->_watcher, conn_on_closed);
    conn->transport->close(conn);
    unlink_conn(conn);
}

void up_conn_loop_close_abandoned(up_conn_t *conn)
{
    up_conn_state_t state = state_of(conn);
    if (is_lent(state) || state == UP_CONN_LENT_BROKEN)
        set_state(conn, UP_CONN_OPEN);
    up_conn_loop_close(conn);
}

up_conn_t *up_conn_new_carried(up_context_t *server, const up_listener_t *listener,
                               const up_transport_t *transport, void *transport_data,
                               const char *remote_addr, const up_protocol_t *protocol,
                               void *data)
{
    up_conn_t *conn = up_calloc(1, sizeof(*conn));
    conn->protocol = protocol;
    conn->protocol_data = data;
    conn->_watcher.fd = -1;
    conn->_watcher.cb = conn_on_event;
    conn->server = server;
    conn->listener = listener;
    conn->transport = transport;
    conn->transport_data = transport_data;
    atomic_init(&conn->_state, UP_CONN_OPEN);
    atomic_init(&conn->_refs, 2); /* the loop's, and the caller's */
    pthread_mutex_init(&conn->_mail_lock, NULL);
    up_server_retain(server);
    snprintf(conn->remote_addr, sizeof(conn->remote_addr), "%s", remote_addr);
    return conn;
}

void up_conn_loop_start_carried(up_conn_t *conn)
{
    up_context_t *server = conn->server;
    conn->_next = server->conns;
    if (server->conns != NULL)
        server->conns->_prev = conn;
    server->conns = conn;
    server->num_conns++;
    up_conn_loop_switch_protocol(conn, conn->protocol, conn->protocol_data);
    up_conn_loop_update(conn);
}

void up_conn_discard_carried(up_conn_t *conn)
{
    set_state(conn, UP_CONN_CLOSED);
    up_conn_release(conn);
    up_conn_release(conn);
}

void up_conn_loop_drop_carried(up_conn_t *conn)
{
    break_locked_state(conn, UP_CONN_CLOSED);
    conn->protocol->on_close(conn);
    up_conn_release(conn);
}

void up_conn_loop_close_after_output(up_conn_t *conn)
{
    if (state_of(conn) == UP_CONN_OPEN)
        set_state(conn, UP_CONN_FLUSHING);
}

void up_conn_loop_want_read(up_conn_t *conn, int on)
{
    conn->_want_read = on ? 1 : 0;
}

void up_conn_loop_set_timer(up_conn_t *conn, up_timer_kind_t kind)
{
    conn->_proto_timer = kind;
}

void up_conn_loop_set_idle_timer(up_conn_t *conn, unsigned idle_ms)
{
    if (conn->_timer_kind == UP_TIMER_IDLE && conn->_idle_timeout_ms != idle_ms) {
        up_timer_disarm(&conn->_timer); /* it sits in the list of the old duration */
        conn->_timer_kind = UP_TIMER_NONE;
    }
    conn->_idle_timeout_ms = idle_ms;
    conn->_proto_timer = idle_ms > 0 ? UP_TIMER_IDLE : UP_TIMER_NONE;
}

void up_conn_loop_switch_protocol(up_conn_t *conn, const up_protocol_t *protocol, void *data)
{
    conn->protocol = protocol;
    conn->protocol_data = data;
    conn->_proto_timer = UP_TIMER_NONE;
    conn->_want_read = 1;
    protocol->on_start(conn);
    if (conn->_rbuf.len > conn->_rpos)
        protocol->on_read(conn);
}

void up_conn_loop_lend(up_conn_t *conn)
{
    set_state(conn, UP_CONN_LENT);
}

/* A hijacked exchange came back: the protocol lets go of the request, a socket the borrower
 * never took is closed, and the loop's reference goes once the backend lets go of the
 * watcher (not watched since the hand-over). */
static void release_hijacked(up_conn_t *conn)
{
    conn->protocol->on_close(conn);
    if (conn->_watcher.fd >= 0) {
        close(conn->_watcher.fd);
        conn->_watcher.fd = -1;
    }
    up_loop_close_watcher(conn->server->loop, &conn->_watcher, conn_on_closed);
}

int up_conn_loop_reclaim(up_conn_t *conn)
{
    up_conn_state_t state = state_of(conn);
    if (state == UP_CONN_HIJACKED) {
        release_hijacked(conn);
        return -1;
    }
    if (state == UP_CONN_LENT_HIJACKING) {
        /* Returned before the socket was handed over: the borrower gave up on it (its thread
         * was interrupted). Nothing sane can follow on this connection. */
        set_state(conn, UP_CONN_OPEN);
        up_conn_loop_close(conn);
        return -1;
    }
    if (state == UP_CONN_LENT_BROKEN) {
        /* Closed while lent (a stop's deadline, the client gone): what the exchange staged
         * last, such as the 503 of a request cut off, goes out if the socket takes it now. */
        set_state(conn, UP_CONN_OPEN);
        up_conn_loop_commit(conn);
        if (write_out(conn) >= 0)
            up_conn_loop_close(conn);
        return -1;
    }
    if (state == UP_CONN_LENT)
        set_state(conn, UP_CONN_OPEN);
    return state == UP_CONN_CLOSED ? -1 : 0;
}

/* ---------------------------------------------------------------- output */

/* Whether bytes wait for the socket: queued, or accepted by the transport and not sent yet. */
static int output_pending(const up_conn_t *conn)
{
    return !up_outq_empty(&conn->_out) || conn->_unflushed;
}

/* Writes what the socket takes now: the output queue, then what the transport buffered
 * (transport.h: its handshake, what writev accepted and could not send at once). Returns 1
 * when that emptied output that was pending, 0 when it did not (or there was nothing), -1
 * when the client is gone (conn closed). */
static int write_out(up_conn_t *conn)
{
    up_context_t *server = conn->server;
    int had = output_pending(conn);
    if (!up_outq_empty(&conn->_out)) {
        uint64_t before = conn->_out.bytes;
        int64_t r = up_outq_write(&conn->_out, &server->pool, conn->transport, conn,
                                  UP_CONN_MAX_WRITE_PER_EVENT);
        if (r < 0) {
            up_conn_loop_close(conn);
            return -1;
        }
        uint64_t done = before - conn->_out.bytes;
        if (done > 0) {
            atomic_fetch_sub(&conn->_backlog, done);
            if (conn->_timer_kind == UP_TIMER_WRITE)
                conn->_timer_kind = UP_TIMER_NONE; /* progress: the write timer starts again */
            /* Producers wait for the backlog to fall below a limit, not for it to empty. */
            wake_waiters(conn);
        }
        if (!up_outq_empty(&conn->_out))
            return 0; /* the transport took what it could; it flushes first next time */
    }
    ssize_t f = conn->transport->flush(conn);
    if (f == UP_IO_ERROR) {
        up_conn_loop_close(conn);
        return -1;
    }
    conn->_unflushed = f != 0;
    return had && !conn->_unflushed;
}

int up_conn_loop_queue_shared(up_conn_t *conn, up_shared_t *shared, size_t offset, size_t len)
{
    if (state_of(conn) != UP_CONN_OPEN)
        return -1;
    atomic_fetch_add(&conn->_backlog, len);
    up_outq_append_shared(&conn->_out, shared, offset, len);
    return 0;
}

void up_conn_loop_defer_update(up_conn_t *conn)
{
    if (conn->_deferred)
        return;
    conn->_deferred = 1;
    up_conn_retain(conn);
    conn->_deferred_next = conn->server->deferred;
    conn->server->deferred = conn;
}

/* The transport holds input the socket will not announce again (transport.h, pending): it is
 * read at the end of this wake-up, after the other connections had their events. The loop is
 * woken for it, as nothing else may wake it. */
static void defer_read(up_conn_t *conn)
{
    if (conn->_read_deferred)
        return;
    conn->_read_deferred = 1;
    up_conn_retain(conn);
    up_context_t *server = conn->server;
    conn->_read_next = server->deferred_reads;
    server->deferred_reads = conn;
    up_loop_wake(server->loop);
}

void up_conn_loop_run_deferred_reads(up_context_t *server)
{
    /* Taken whole: a read deferred again while these run (a client that keeps its transport
     * full) waits for the next wake-up rather than holding this one. */
    up_conn_t *list = server->deferred_reads;
    server->deferred_reads = NULL;
    while (list != NULL) {
        up_conn_t *conn = list;
        list = conn->_read_next;
        conn->_read_deferred = 0;
        if (state_of(conn) != UP_CONN_CLOSED)
            conn_on_event(&conn->_watcher, UP_EV_READ);
        up_conn_release(conn);
    }
}

void up_conn_loop_drop_deferred_reads(up_context_t *server)
{
    while (server->deferred_reads != NULL) {
        up_conn_t *conn = server->deferred_reads;
        server->deferred_reads = conn->_read_next;
        conn->_read_deferred = 0;
        up_conn_release(conn);
    }
}

void up_conn_loop_run_deferred(up_context_t *server)
{
    while (server->deferred != NULL) {
        up_conn_t *conn = server->deferred;
        server->deferred = conn->_deferred_next;
        conn->_deferred = 0;
        up_conn_loop_update(conn);
        up_conn_release(conn);
    }
}

void up_conn_loop_commit(up_conn_t *conn)
{
    if (up_outq_empty(&conn->_staged))
        return;
    atomic_fetch_add(&conn->_backlog, conn->_staged.bytes);
    up_outq_splice(&conn->_out, &conn->_staged);
}

void up_conn_loop_flush(up_conn_t *conn)
{
    up_conn_loop_commit(conn);
    up_conn_loop_update(conn); /* what is left waits for the socket: watch for it */
}

/* The timer for what conn waits for now. A transport's handshake runs on the head timer, so a
 * client that never finishes one is closed after the head timeout (up_conn_loop_on_timeout). */
static void arm_timer(up_conn_t *conn)
{
    up_context_t *server = conn->server;
    up_conn_state_t state = state_of(conn);
    int kind = output_pending(conn)                 ? UP_TIMER_WRITE
               : state == UP_CONN_LINGERING         ? UP_TIMER_LINGER
               : conn->transport->handshaking(conn) ? UP_TIMER_HEAD
                                                    : conn->_proto_timer;
    if (kind == UP_TIMER_NONE) {
        up_timer_disarm(&conn->_timer);
        conn->_timer_kind = UP_TIMER_NONE;
        return;
    }
    /* The head and linger timers run from when their state began, so a client that trickles
     * bytes (slowloris) cannot push them back; the write timer restarts on progress (see
     * write_out), the keep-alive, body and idle timers on every event. */
    if (kind == conn->_timer_kind &&
        (kind == UP_TIMER_HEAD || kind == UP_TIMER_LINGER || kind == UP_TIMER_WRITE))
        return;
    up_timer_list_t *list = kind == UP_TIMER_IDLE
                                ? up_server_idle_timers(server, conn->_idle_timeout_ms)
                                : &server->timers[kind];
    up_timer_arm(list, &conn->_timer, up_loop_now(server->loop));
    conn->_timer_kind = kind;
}

/* Whether conn reads its socket now: what conn_on_event reads on a read event. */
static int wants_input(const up_conn_t *conn)
{
    up_conn_state_t state = state_of(conn);
    return (state == UP_CONN_OPEN && conn->_want_read && !conn->eof) ||
           state == UP_CONN_LINGERING;
}

/* LENT_HIJACKING, its output written: the loop forgets the socket and the borrower may take
 * it (conn.h). */
static void hand_over(up_conn_t *conn)
{
    if (watch(conn, 0) != 0) {
        up_conn_loop_close(conn); /* still watched: it cannot be handed on safely */
        return;
    }
    up_timer_disarm(&conn->_timer);
    conn->_timer_kind = UP_TIMER_NONE;
    unlink_conn(conn);
    conn->_watcher.fd = conn->transport->detach(conn);
    break_locked_state(conn, UP_CONN_HIJACKED); /* wakes the borrower's wait */
}

void up_conn_loop_update(up_conn_t *conn)
{
    for (;;) {
        up_conn_state_t state = state_of(conn);
        if (is_broken(state))
            return;
        if (!is_lent(state))
            up_conn_loop_commit(conn);
        int drained = write_out(conn);
        if (drained < 0)
            return;
        if (!drained || state == UP_CONN_LENT_HIJACKING)
            break;
        /* The protocol may have more to say now (pipelined requests held back): loop rather
         * than recurse. */
        conn->protocol->on_drained(conn);
        if (state_of(conn) == UP_CONN_LENT || up_outq_empty(&conn->_staged))
            break;
    }
    up_conn_state_t state = state_of(conn);
    if (is_broken(state))
        return;
    int pending = output_pending(conn);
    if (state == UP_CONN_LENT_HIJACKING && !pending) {
        hand_over(conn);
        return;
    }
    if (state == UP_CONN_FLUSHING && !pending) {
        if (conn->eof) {
            up_conn_loop_close(conn);
            return;
        }
        conn->transport->shutdown(conn);
        set_state(conn, state = UP_CONN_LINGERING);
        if (write_out(conn) < 0) /* what the shutdown buffered (a TLS close_notify) */
            return;
    }
    unsigned events = output_pending(conn) ? UP_EV_WRITE : 0;
    if (state == UP_CONN_LENT)
        events |= conn->_watcher.events & UP_EV_READ; /* as conn_on_event left it */
    else if (wants_input(conn))
        events |= UP_EV_READ;
    if (watch(conn, conn->transport->events(conn, events)) != 0) {
        up_conn_loop_close(conn);
        return;
    }
    if (wants_input(conn) && conn->transport->pending(conn))
        defer_read(conn);
    arm_timer(conn);
}

/* ---------------------------------------------------------------- input */

/* A lingering close's read: drops at most UP_LINGER_MAX_READ_PER_EVENT bytes (the socket
 * stays readable and the loop comes back after the other connections had their turn), and
 * closes once the client ends, fails, or has sent UP_LINGER_MAX_BYTES since the shutdown. */
static void drain_input(up_conn_t *conn)
{
    char scratch[16384];
    size_t budget = UP_LINGER_MAX_READ_PER_EVENT;
    while (budget > 0) {
        ssize_t n = conn->transport->read(conn, scratch,
                                          budget < sizeof(scratch) ? budget : sizeof(scratch));
        if (n == UP_IO_AGAIN)
            return;
        if (n <= 0) {
            up_conn_loop_close(conn); /* end of stream or error: the client has what we sent */
            return;
        }
        budget -= (size_t)n;
        conn->_lingered += (uint32_t)n;
        if (conn->_lingered >= UP_LINGER_MAX_BYTES) {
            up_conn_loop_close(conn);
            return;
        }
    }
}

void up_conn_loop_compact_input(up_conn_t *conn)
{
    up_buffer_t *b = &conn->_rbuf;
    if (conn->_rpos == 0)
        return;
    memmove(b->base, b->base + conn->_rpos, b->len - conn->_rpos);
    b->len -= conn->_rpos;
    conn->_rpos = 0;
}

/* Reads what is there into _rbuf. Returns the bytes read, or 1 at the end of stream (the
 * protocol should look), 0 when nothing came, -1 when conn was closed. */
static ssize_t read_in(up_conn_t *conn)
{
    up_buffer_t *b = &conn->_rbuf;
    if (b->base != NULL && conn->_rpos == b->len)
        b->len = conn->_rpos = 0; /* all consumed: start over rather than grow */
    if (b->base == NULL || b->len == b->cap)
        up_buffer_reserve(b, &conn->server->pool, b->base == NULL ? UP_BUFFER_CHUNK : b->cap);
    ssize_t n = conn->transport->read(conn, b->base + b->len, b->cap - b->len);
    if (n > 0) {
        b->len += (size_t)n;
        return n;
    }
    if (n == 0) {
        conn->eof = 1;
        return 1;
    }
    if (n == UP_IO_AGAIN)
        return 0;
    up_conn_loop_close(conn);
    return -1;
}

/* Reads and hands the bytes to the protocol, again while it wants input and the transport
 * holds more that the socket will not announce (transport.h), at most
 * UP_CONN_MAX_READ_PER_EVENT bytes: what is left then is read at the end of the wake-up
 * (up_conn_loop_update defers it), after the other connections had their turn. */
static void read_input(up_conn_t *conn)
{
    size_t budget = UP_CONN_MAX_READ_PER_EVENT;
    for (;;) {
        ssize_t r = read_in(conn);
        if (r < 0)
            return;
        if (r > 0)
            conn->protocol->on_read(conn);
        if (r == 0 || (size_t)r >= budget || state_of(conn) != UP_CONN_OPEN ||
            !conn->_want_read || conn->eof || !conn->transport->pending(conn))
            return;
        budget -= (size_t)r;
    }
}

static void conn_on_event(up_watcher_t *w, unsigned revents)
{
    up_conn_t *conn = (up_conn_t *)w;
    if (revents & UP_EV_READ) {
        up_conn_state_t state = state_of(conn);
        if (state == UP_CONN_LINGERING) {
            drain_input(conn);
            if (state_of(conn) == UP_CONN_CLOSED)
                return;
        } else if (is_lent(state)) {
            /* Never read while the exchange is lent: its request lives in _rbuf. The read
             * watch is kept on during an exchange, since taking it off and on again would cost
             * two syscalls a request, and only comes off when the socket would otherwise keep
             * waking the loop (the client sent more, or left). */
            watch(conn, w->events & ~UP_EV_READ);
        } else if (state == UP_CONN_OPEN && conn->_want_read && !conn->eof) {
            read_input(conn);
            if (state_of(conn) == UP_CONN_CLOSED)
                return;
        }
    }
    up_conn_loop_update(conn);
}

void up_conn_loop_on_timeout(up_conn_t *conn)
{
    int kind = conn->_timer_kind;
    up_timer_disarm(&conn->_timer);
    conn->_timer_kind = UP_TIMER_NONE;
    /* A client that never finished its handshake has no protocol to answer it in. */
    if (kind == UP_TIMER_WRITE || kind == UP_TIMER_LINGER || conn->transport->handshaking(conn)) {
        up_conn_loop_close(conn);
        return;
    }
    conn->_proto_timer = UP_TIMER_NONE;
    conn->protocol->on_timeout(conn);
    up_conn_loop_update(conn);
}

/* ---------------------------------------------------------------- mail */

/* Puts conn on the server's mail list unless it is there already; _mail_lock held. The list
 * holds a reference. Returns 1 when the list was empty: whoever makes it non-empty owes the
 * loop a wake-up (a list that is not empty has one on its way). */
static int enlist_locked(up_conn_t *conn)
{
    if (atomic_exchange(&conn->_listed, 1))
        return 0;
    up_conn_retain(conn);
    up_context_t *server = conn->server;
    up_conn_t *head = atomic_load(&server->mail_head);
    do {
        conn->_mail_next = head;
    } while (!atomic_compare_exchange_weak(&server->mail_head, &head, conn));
    return head == NULL;
}

/* Whether a thread other than the loop's may still hand the connection output: not once it
 * closes or is closing, since what the protocol wrote last (a WebSocket's Close) is final. A
 * lent exchange's borrower may post until it returns the exchange. */
static int takes_output(up_conn_state_t state)
{
    return state == UP_CONN_OPEN || state == UP_CONN_LENT || state == UP_CONN_LENT_BROKEN;
}

/* Moves *out into the mail; _mail_lock held. Returns what enlist_locked does, or -1 when conn
 * takes no more output (out is left as it was). */
static int post_locked(up_conn_t *conn, up_outq_t *out)
{
    if (!takes_output(state_of(conn)))
        return -1;
    atomic_fetch_add(&conn->_backlog, out->bytes);
    up_outq_splice(&conn->_mail, out);
    return enlist_locked(conn);
}

int up_conn_lent_post(up_conn_t *conn)
{
    pthread_mutex_lock(&conn->_mail_lock);
    int wake = post_locked(conn, &conn->_staged);
    pthread_mutex_unlock(&conn->_mail_lock);
    if (wake < 0)
        up_outq_clear(&conn->_staged, &conn->server->pool);
    /* Broken or not, conn may now head the mail list: the wake-up is owed either way. */
    return wake;
}

int up_conn_lent_send(up_conn_t *conn)
{
    up_context_t *server = conn->server;
    if (up_loop_is_loop_thread(server->loop)) {
        up_conn_loop_flush(conn);
        return up_conn_any_broken(conn) ? -1 : 0;
    }
    int wake = up_conn_lent_post(conn);
    if (wake > 0)
        up_loop_wake(server->loop);
    return wake < 0 || up_conn_any_broken(conn) ? -1 : 0;
}

void up_conn_lent_return(up_conn_t *conn)
{
    pthread_mutex_lock(&conn->_mail_lock);
    conn->_mail_flags |= UP_CONN_MAIL_RETURNED;
    int wake = enlist_locked(conn);
    pthread_mutex_unlock(&conn->_mail_lock);
    if (wake)
        up_loop_wake(conn->server->loop);
}

void up_conn_lent_return_here(up_conn_t *conn)
{
    /* Output posted earlier goes first. If conn is on the mail list, the wake-up finds it
     * with nothing left to do. */
    pthread_mutex_lock(&conn->_mail_lock);
    up_outq_splice(&conn->_out, &conn->_mail);
    pthread_mutex_unlock(&conn->_mail_lock);
    if (up_conn_loop_reclaim(conn) != 0)
        return;
    up_conn_loop_commit(conn);
    conn->protocol->on_resume(conn);
    up_conn_loop_update(conn);
}

int up_conn_lent_output_in_memory(up_conn_t *conn)
{
    pthread_mutex_lock(&conn->_mail_lock);
    int posted_files = conn->_mail.file_bytes > 0;
    pthread_mutex_unlock(&conn->_mail_lock);
    return !posted_files && conn->_staged.file_bytes == 0 && conn->_out.file_bytes == 0;
}

/* Blocks on a waiter of this thread's own (woken when conn's backlog falls to max_bytes, and on
 * every move to a broken state) until settled(conn, max_bytes) holds or *cancel is set. */
static void wait_until(up_conn_t *conn, uint64_t max_bytes,
                       int (*settled)(up_conn_t *conn, uint64_t max_bytes), const atomic_int *cancel)
{
    up_conn_waiter_t w = {.max_bytes = max_bytes};
    pthread_cond_init(&w.cond, NULL);
    pthread_mutex_lock(&conn->_mail_lock);
    w.next = conn->_waiters;
    conn->_waiters = &w;
    atomic_fetch_add(&conn->_num_waiters, 1);
    while (!settled(conn, max_bytes) && !atomic_load(cancel))
        pthread_cond_wait(&w.cond, &conn->_mail_lock);
    up_conn_waiter_t **p = &conn->_waiters;
    while (*p != &w)
        p = &(*p)->next;
    *p = w.next;
    atomic_fetch_sub(&conn->_num_waiters, 1);
    pthread_mutex_unlock(&conn->_mail_lock);
    pthread_cond_destroy(&w.cond);
}

int up_conn_lent_hijack(up_conn_t *conn)
{
    if (conn->transport->detach == NULL) {
        up_outq_clear(&conn->_staged, &conn->server->pool);
        return -1;
    }
    pthread_mutex_lock(&conn->_mail_lock);
    int wake = -1;
    if (state_of(conn) == UP_CONN_LENT) {
        wake = post_locked(conn, &conn->_staged);
        conn->_mail_flags |= UP_CONN_MAIL_HIJACK;
    }
    pthread_mutex_unlock(&conn->_mail_lock);
    if (wake < 0)
        up_outq_clear(&conn->_staged, &conn->server->pool);
    return wake;
}

int up_conn_lent_take_socket(up_conn_t *conn)
{
    up_conn_state_t state = state_of(conn);
    if (is_lent(state))
        return -2;
    if (state != UP_CONN_HIJACKED || conn->_watcher.fd < 0)
        return -1;
    /* Written once HIJACKED is seen: the loop no longer looks at the fd until the exchange is
     * returned, which this thread does later. */
    int fd = conn->_watcher.fd;
    conn->_watcher.fd = -1;
    return fd;
}

/* Whether the hand-over asked for by up_conn_lent_hijack is done or has failed; _mail_lock
 * held (HIJACKED and LENT_BROKEN are set under it, waking every waiter). */
static int hijack_settled(up_conn_t *conn, uint64_t unused)
{
    (void)unused;
    return !is_lent(state_of(conn));
}

void up_conn_lent_wait_hijack(up_conn_t *conn, const atomic_int *cancel)
{
    wait_until(conn, 0, hijack_settled, cancel);
}

int up_conn_any_post(up_conn_t *conn, up_outq_t *out)
{
    /* The wake-up is made under the lock: a close takes it too, so once a connection is
     * closed (and its server perhaps freed with its loop) no poster is still waking. */
    pthread_mutex_lock(&conn->_mail_lock);
    int wake = post_locked(conn, out);
    if (wake > 0)
        up_loop_wake(conn->server->loop);
    pthread_mutex_unlock(&conn->_mail_lock);
    if (wake < 0)
        up_outq_clear(out, &conn->server->pool);
    return wake < 0 ? -1 : 0;
}

/* Sets a mail flag and enlists conn, waking the loop under the lock (see up_conn_any_post)
 * unless quiet (the caller runs the loop). Returns 0, or -1 when conn is closed. */
static int flag_mail(up_conn_t *conn, unsigned flag, int quiet)
{
    pthread_mutex_lock(&conn->_mail_lock);
    int wake = -1;
    if (!is_final(state_of(conn))) {
        conn->_mail_flags |= flag;
        wake = enlist_locked(conn);
        if (wake > 0 && !quiet)
            up_loop_wake(conn->server->loop);
    }
    pthread_mutex_unlock(&conn->_mail_lock);
    return wake < 0 ? -1 : 0;
}

int up_conn_any_request_close(up_conn_t *conn)
{
    return flag_mail(conn, UP_CONN_MAIL_CLOSE, 0);
}

int up_conn_any_notify(up_conn_t *conn)
{
    return flag_mail(conn, UP_CONN_MAIL_NOTIFY, 0);
}

int up_conn_loop_notify(up_conn_t *conn)
{
    return flag_mail(conn, UP_CONN_MAIL_NOTIFY, 1);
}

uint64_t up_conn_any_backlog(const up_conn_t *conn)
{
    return atomic_load(&conn->_backlog);
}

/* Whether conn's backlog is down to max_bytes, or nothing will ever drain it; _mail_lock held. */
static int backlog_settled(up_conn_t *conn, uint64_t max_bytes)
{
    return atomic_load(&conn->_backlog) <= max_bytes || up_conn_any_broken(conn);
}

int up_conn_any_wait_backlog(up_conn_t *conn, uint64_t max_bytes, const atomic_int *cancel)
{
    wait_until(conn, max_bytes, backlog_settled, cancel);
    return up_conn_any_broken(conn) ? -1 : 0;
}

void up_conn_any_cancel_waits(up_conn_t *conn)
{
    pthread_mutex_lock(&conn->_mail_lock);
    for (up_conn_waiter_t *w = conn->_waiters; w != NULL; w = w->next)
        pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&conn->_mail_lock);
}

/* One connection's mail, on the loop thread. */
static void take_one(up_conn_t *conn)
{
    up_outq_t mail;
    up_outq_init(&mail);
    pthread_mutex_lock(&conn->_mail_lock);
    up_outq_splice(&mail, &conn->_mail);
    unsigned flags = conn->_mail_flags;
    conn->_mail_flags = 0;
    pthread_mutex_unlock(&conn->_mail_lock);
    if (state_of(conn) == UP_CONN_CLOSED) {
        up_outq_clear(&mail, &conn->server->pool);
        return;
    }
    if (takes_output(state_of(conn))) {
        up_outq_splice(&conn->_out, &mail);
    } else {
        /* Posted before the protocol closed its output, taken after: dropped, uncounted. */
        atomic_fetch_sub(&conn->_backlog, mail.bytes);
        up_outq_clear(&mail, &conn->server->pool);
        wake_waiters(conn);
    }
    if ((flags & UP_CONN_MAIL_HIJACK) && state_of(conn) == UP_CONN_LENT)
        set_locked_state(conn, UP_CONN_LENT_HIJACKING); /* posts are refused from now on */
    if (flags & UP_CONN_MAIL_RETURNED) {
        if (up_conn_loop_reclaim(conn) != 0)
            return;
        /* What the thread staged last goes after what it posted. */
        up_conn_loop_commit(conn);
        conn->protocol->on_resume(conn);
    }
    if ((flags & UP_CONN_MAIL_NOTIFY) && !is_final(state_of(conn)))
        conn->protocol->on_notify(conn);
    if ((flags & UP_CONN_MAIL_CLOSE) && !is_final(state_of(conn)))
        conn->protocol->on_close_request(conn);
    up_conn_loop_update(conn);
}

void up_conn_loop_take_mail(up_context_t *server)
{
    up_conn_t *list = atomic_exchange(&server->mail_head, NULL);
    /* The list is a stack: newest first. Reversed, connections are served in posting order. */
    up_conn_t *fifo = NULL;
    while (list != NULL) {
        up_conn_t *next = list->_mail_next;
        list->_mail_next = fifo;
        fifo = list;
        list = next;
    }
    while (fifo != NULL) {
        up_conn_t *conn = fifo;
        /* Read before the flag is cleared: from then on a poster may relink conn. */
        fifo = conn->_mail_next;
        atomic_store(&conn->_listed, 0);
        take_one(conn);
        up_conn_release(conn); /* the list's reference */
    }
}
