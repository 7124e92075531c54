/* Connections: reading when the protocol wants input, writing the output queue whenever the
 * socket takes it, timers, closing, and the hand-over of output and exchanges between the loop
 * thread and the threads an exchange is lent to. What the bytes mean is the protocol's. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "conn.h"
#include "memory.h"

static void conn_on_event(up_watcher_t *w, unsigned revents);
static int write_out(up_conn_t *conn);

/* ---------------------------------------------------------------- life cycle */

up_conn_t *up_conn_accept(up_server_t *server, const up_listener_t *listener, int fd,
                          const struct sockaddr *addr)
{
    up_conn_t *conn = up_calloc(1, sizeof(*conn));
    conn->_watcher.fd = fd;
    conn->_watcher.cb = conn_on_event;
    conn->server = server;
    conn->listener = listener;
    conn->transport = &up_transport_tcp;
    conn->protocol = &up_http1_protocol;
    unsigned port;
    up_format_address(addr, conn->remote_addr, sizeof(conn->remote_addr), &port, 0);
    conn->_next = server->conns;
    if (server->conns != NULL)
        server->conns->_prev = conn;
    server->conns = conn;
    server->num_conns++;
    up_http1_start(conn);
    /* The listener defers accept until data arrives, so the first request is usually here
     * already: read it now rather than after another trip through the loop. */
    conn_on_event(&conn->_watcher, UP_EV_READ);
    return conn;
}

static void conn_free(up_conn_t *conn)
{
    up_buffer_pool_t *pool = &conn->server->pool;
    up_outq_clear(&conn->_staged, pool);
    up_outq_clear(&conn->_posted, pool);
    up_outq_clear(&conn->_out, pool);
    up_buffer_release(&conn->_rbuf, pool);
    free(conn);
}

/* The backend let go of the watcher: the memory can go. */
static void conn_on_closed(up_watcher_t *w, unsigned revents)
{
    up_conn_t *conn = (up_conn_t *)w;
    up_server_t *server = conn->server;
    (void)revents;
    pthread_mutex_lock(&server->post_lock);
    if (conn->_on_post_list) {
        /* Posted to after the close: take it off the list (rare, and the list is short). */
        up_conn_t **p = &server->post_head, *prev = NULL;
        while (*p != NULL && *p != conn) {
            prev = *p;
            p = &(*p)->_post_next;
        }
        if (*p == conn) {
            *p = conn->_post_next;
            if (server->post_tail == conn)
                server->post_tail = prev;
        }
    }
    pthread_mutex_unlock(&server->post_lock);
    conn_free(conn);
    up_server_closed_one(server);
}

/* Wakes producers waiting on conn's backlog (it shrank, or the client is gone). */
static void wake_waiters(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    pthread_mutex_lock(&server->post_lock);
    if (conn->_backlog_waiters > 0)
        pthread_cond_broadcast(&server->drain_cond);
    pthread_mutex_unlock(&server->post_lock);
}

void up_conn_close(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    if (conn->_closed)
        return;
    if (conn->_lent) {
        /* The other thread still reads the request and writes the response: stop it
         * producing, and close when it gives the exchange back. */
        atomic_store(&conn->broken, 1);
        conn->_close_when_back = 1;
        up_loop_watch(server->loop, &conn->_watcher, 0);
        up_timer_disarm(&conn->_timer);
        conn->_timer_kind = UP_TIMER_NONE;
        wake_waiters(conn);
        return;
    }
    conn->_closed = 1;
    atomic_store(&conn->broken, 1);
    conn->protocol->on_close(conn);
    pthread_mutex_lock(&server->post_lock);
    conn->_post_closed = 1;
    if (conn->_backlog_waiters > 0)
        pthread_cond_broadcast(&server->drain_cond);
    pthread_mutex_unlock(&server->post_lock);
    up_timer_disarm(&conn->_timer);
    server->pending_closes++;
    up_loop_close_watcher(server->loop, &conn->_watcher, conn_on_closed);
    conn->transport->close(conn);
    if (conn->_prev != NULL)
        conn->_prev->_next = conn->_next;
    else
        server->conns = conn->_next;
    if (conn->_next != NULL)
        conn->_next->_prev = conn->_prev;
    server->num_conns--;
}

void up_conn_close_after_output(up_conn_t *conn)
{
    conn->_closing = 1;
}

void up_conn_want_read(up_conn_t *conn, int on)
{
    conn->_want_read = on ? 1 : 0;
}

void up_conn_set_timer(up_conn_t *conn, up_timer_kind_t kind)
{
    conn->_proto_timer = kind;
}

void up_conn_switch_protocol(up_conn_t *conn, const up_protocol_t *protocol, void *data)
{
    conn->protocol = protocol;
    conn->protocol_data = data;
    conn->_proto_timer = UP_TIMER_NONE;
    conn->_want_read = 1;
    if (conn->_rbuf.len > conn->_rpos)
        protocol->on_read(conn);
}

void up_conn_lend(up_conn_t *conn)
{
    conn->_lent = 1;
}

int up_conn_give_back(up_conn_t *conn)
{
    conn->_lent = 0;
    if (conn->_close_when_back) {
        /* Closed while lent (a stop's deadline, the client gone): what the exchange staged
         * last, such as the 503 of a request cut off, goes out if the socket takes it now. */
        up_conn_commit_staged(conn);
        if (write_out(conn) >= 0)
            up_conn_close(conn);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- output */

/* Writes what the socket takes now. Returns 1 when that emptied the output, 0 when it did not
 * (or there was nothing), -1 when the client is gone (conn closed). */
static int write_out(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    if (up_outq_empty(&conn->_out))
        return 0;
    uint64_t before = conn->_out.bytes;
    int64_t r = up_outq_write(&conn->_out, &server->pool, conn->transport, conn,
                              UP_CONN_MAX_WRITE_PER_EVENT);
    if (r < 0) {
        up_conn_close(conn);
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
    return up_outq_empty(&conn->_out);
}

void up_conn_commit_staged(up_conn_t *conn)
{
    if (up_outq_empty(&conn->_staged))
        return;
    atomic_fetch_add(&conn->_backlog, conn->_staged.bytes);
    up_outq_splice(&conn->_out, &conn->_staged);
}

void up_conn_flush(up_conn_t *conn)
{
    up_conn_commit_staged(conn);
    up_conn_update(conn); /* what is left waits for the socket: watch for it */
}

/* The timer for what conn waits for now. */
static void arm_timer(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    int kind = !up_outq_empty(&conn->_out) ? UP_TIMER_WRITE
               : conn->_lingering         ? UP_TIMER_LINGER
                                          : conn->_proto_timer;
    if (kind == UP_TIMER_NONE) {
        up_timer_disarm(&conn->_timer);
        conn->_timer_kind = UP_TIMER_NONE;
        return;
    }
    /* The head and linger timers run from when their state began, so a client that trickles
     * bytes (slowloris) cannot push them back; the write timer restarts on progress (see
     * write_out), the keep-alive and body timers on every event. */
    if (kind == conn->_timer_kind &&
        (kind == UP_TIMER_HEAD || kind == UP_TIMER_LINGER || kind == UP_TIMER_WRITE))
        return;
    up_timer_arm(&server->timers[kind], &conn->_timer, up_loop_now(server->loop));
    conn->_timer_kind = kind;
}

void up_conn_update(up_conn_t *conn)
{
    for (;;) {
        if (conn->_closed || conn->_close_when_back)
            return;
        if (!conn->_lent)
            up_conn_commit_staged(conn);
        int drained = write_out(conn);
        if (drained < 0)
            return;
        if (!drained)
            break;
        /* The protocol may have more to say now (pipelined requests held back): loop rather
         * than recurse. */
        conn->protocol->on_drained(conn);
        if (conn->_lent || up_outq_empty(&conn->_staged))
            break;
    }
    if (conn->_closed || conn->_close_when_back)
        return;
    int pending = !up_outq_empty(&conn->_out);
    if (conn->_closing && !pending && !conn->_lingering && !conn->_lent) {
        if (conn->eof) {
            up_conn_close(conn);
            return;
        }
        conn->transport->shutdown(conn);
        conn->_lingering = 1;
    }
    unsigned events = pending ? UP_EV_WRITE : 0;
    if (conn->_lent)
        events |= conn->_watcher.events & UP_EV_READ; /* as conn_on_event left it */
    else if ((conn->_want_read && !conn->eof) || conn->_lingering)
        events |= UP_EV_READ;
    if (up_loop_watch(conn->server->loop, &conn->_watcher,
                      conn->transport->events(conn, events)) != 0) {
        up_conn_close(conn);
        return;
    }
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
            up_conn_close(conn); /* end of stream or error: the client has what we sent */
            return;
        }
        budget -= (size_t)n;
        conn->_lingered += (uint32_t)n;
        if (conn->_lingered >= UP_LINGER_MAX_BYTES) {
            up_conn_close(conn);
            return;
        }
    }
}

/* Reads what is there into _rbuf. Returns 1 when the protocol should look (new bytes or end of
 * stream), 0 when nothing came, -1 when conn was closed. */
static int read_in(up_conn_t *conn)
{
    up_buffer_t *b = &conn->_rbuf;
    if (b->base == NULL || b->len == b->cap)
        up_buffer_reserve(b, &conn->server->pool, b->base == NULL ? UP_BUFFER_CHUNK : b->cap);
    ssize_t n = conn->transport->read(conn, b->base + b->len, b->cap - b->len);
    if (n > 0) {
        b->len += (size_t)n;
        return 1;
    }
    if (n == 0) {
        conn->eof = 1;
        return 1;
    }
    if (n == UP_IO_AGAIN)
        return 0;
    up_conn_close(conn);
    return -1;
}

static void conn_on_event(up_watcher_t *w, unsigned revents)
{
    up_conn_t *conn = (up_conn_t *)w;
    if (revents & UP_EV_READ) {
        if (conn->_lingering) {
            drain_input(conn);
            if (conn->_closed)
                return;
        } else if (conn->_lent) {
            /* Never read while the exchange is lent: its request lives in _rbuf. The read
             * watch is kept on during an exchange, since taking it off and on again would cost
             * two syscalls a request, and only comes off when the socket would otherwise keep
             * waking the loop (the client sent more, or left). */
            up_loop_watch(conn->server->loop, w, w->events & ~UP_EV_READ);
        } else if (conn->_want_read && !conn->eof) {
            int r = read_in(conn);
            if (r < 0)
                return;
            if (r > 0)
                conn->protocol->on_read(conn);
        }
    }
    up_conn_update(conn);
}

void up_conn_on_timeout(up_conn_t *conn)
{
    int kind = conn->_timer_kind;
    up_timer_disarm(&conn->_timer);
    conn->_timer_kind = UP_TIMER_NONE;
    if (kind == UP_TIMER_WRITE || kind == UP_TIMER_LINGER) {
        up_conn_close(conn);
        return;
    }
    conn->_proto_timer = UP_TIMER_NONE;
    conn->protocol->on_timeout(conn);
    up_conn_update(conn);
}

/* ---------------------------------------------------------------- other threads */

/* Puts conn on the server's post list; post_lock held. Returns 1 when the loop needs a wake
 * (the list was empty: a list that is not has a wake-up on its way). */
static int enlist_locked(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    if (conn->_on_post_list)
        return 0;
    conn->_on_post_list = 1;
    conn->_post_next = NULL;
    int first = server->post_head == NULL;
    if (first)
        server->post_head = conn;
    else
        server->post_tail->_post_next = conn;
    server->post_tail = conn;
    return first;
}

int up_conn_send(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    if (up_loop_is_loop_thread(server->loop)) {
        up_conn_flush(conn);
        return atomic_load(&conn->broken) ? -1 : 0;
    }
    int wake = up_conn_post(conn);
    if (wake > 0)
        up_loop_wake(server->loop);
    return wake < 0 || atomic_load(&conn->broken) ? -1 : 0;
}

int up_conn_post(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    uint64_t n = conn->_staged.bytes;
    pthread_mutex_lock(&server->post_lock);
    int closed = conn->_post_closed;
    int wake = 0;
    if (!closed) {
        up_outq_splice(&conn->_posted, &conn->_staged);
        atomic_fetch_add(&conn->_backlog, n);
        wake = enlist_locked(conn);
    }
    pthread_mutex_unlock(&server->post_lock);
    if (closed) {
        up_outq_clear(&conn->_staged, &server->pool);
        return -1;
    }
    /* Broken or not, conn may now head the post list: the wake-up is owed either way. */
    return wake;
}

void up_conn_resume(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    pthread_mutex_lock(&server->post_lock);
    conn->_resume_posted = 1;
    int wake = enlist_locked(conn);
    pthread_mutex_unlock(&server->post_lock);
    if (wake)
        up_loop_wake(server->loop);
}

void up_conn_resume_here(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    /* Output posted earlier goes first. If conn is on the post list, the wake-up finds it
     * with nothing left to do. */
    pthread_mutex_lock(&server->post_lock);
    up_outq_splice(&conn->_out, &conn->_posted);
    pthread_mutex_unlock(&server->post_lock);
    if (conn->_closed || up_conn_give_back(conn) != 0)
        return;
    up_conn_commit_staged(conn);
    conn->protocol->on_resume(conn);
    up_conn_update(conn);
}

uint64_t up_conn_backlog(up_conn_t *conn)
{
    return atomic_load(&conn->_backlog);
}

int up_conn_wait_backlog(up_conn_t *conn, uint64_t max_bytes, const atomic_int *cancel)
{
    up_server_t *server = conn->server;
    pthread_mutex_lock(&server->post_lock);
    conn->_backlog_waiters++;
    while (atomic_load(&conn->_backlog) > max_bytes && !atomic_load(&conn->broken) &&
           !conn->_post_closed && !atomic_load(cancel))
        pthread_cond_wait(&server->drain_cond, &server->post_lock);
    conn->_backlog_waiters--;
    pthread_mutex_unlock(&server->post_lock);
    return atomic_load(&conn->broken) ? -1 : 0;
}

void up_conn_cancel_wait(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    pthread_mutex_lock(&server->post_lock);
    pthread_cond_broadcast(&server->drain_cond);
    pthread_mutex_unlock(&server->post_lock);
}

void up_conn_take_posted(up_server_t *server)
{
    pthread_mutex_lock(&server->post_lock);
    up_conn_t *list = server->post_head;
    server->post_head = server->post_tail = NULL;
    pthread_mutex_unlock(&server->post_lock);
    while (list != NULL) {
        up_conn_t *conn = list;
        /* Still flagged as listed until here, so a post meanwhile does not relink it. */
        pthread_mutex_lock(&server->post_lock);
        list = conn->_post_next;
        conn->_on_post_list = 0;
        int resumed = conn->_resume_posted;
        conn->_resume_posted = 0;
        up_outq_splice(&conn->_out, &conn->_posted);
        pthread_mutex_unlock(&server->post_lock);
        if (conn->_closed)
            continue;
        if (resumed) {
            if (up_conn_give_back(conn) != 0)
                continue;
            /* What the thread staged last goes after what it posted. */
            up_conn_commit_staged(conn);
            conn->protocol->on_resume(conn);
        }
        up_conn_update(conn);
    }
}
