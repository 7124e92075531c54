/* Connections: the read - parse - dispatch - write cycle of one HTTP/1.1 client.
 *
 * A connection reads into its read buffer, parses as many requests as are complete, hands each
 * to the binding and queues its response, and writes all queued responses in one write before
 * the loop sleeps. It stops reading while max_pipeline responses wait to be written, so a client
 * that pipelines without reading cannot make the server buffer without bound. */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <unistd.h>
#include "conn.h"
#include "memory.h"
#include "response.h"

enum { TIMER_NONE, TIMER_KEEPALIVE, TIMER_HEAD, TIMER_BODY, TIMER_WRITE, TIMER_LINGER };

static void conn_process(up_conn_t *conn);

/* ---------------------------------------------------------------- output */

char *up_conn_out_reserve(up_conn_t *conn, size_t n)
{
    return up_buffer_reserve(&conn->_wbuf, &conn->server->pool, n);
}

void up_conn_out_commit(up_conn_t *conn, size_t n)
{
    conn->_wbuf.len += n;
    conn->_out_total += n;
}

size_t up_conn_pending(const up_conn_t *conn)
{
    return conn->_wbuf.len + (size_t)conn->_file_left;
}

/* What a failed send or sendfile means: 1 try again, 0 the socket is full, -1 the client is
 * gone (conn->broken is set). */
static int write_failed(up_conn_t *conn)
{
    if (errno == EINTR)
        return 1;
    if (errno == EAGAIN || errno == EWOULDBLOCK)
        return 0;
    conn->broken = 1;
    return -1;
}

/* Writes what the socket takes now. Returns 0 (maybe with bytes left), or -1 when the client
 * is gone. */
static int flush_some(up_conn_t *conn)
{
    while (conn->_wbuf.len > 0) {
        ssize_t n = send(conn->_watcher.fd, conn->_wbuf.base, conn->_wbuf.len, MSG_NOSIGNAL);
        if (n < 0) {
            int r = write_failed(conn);
            if (r <= 0)
                return r;
            continue;
        }
        conn->_sent_total += (uint64_t)n;
        up_buffer_consume(&conn->_wbuf, (size_t)n);
    }
    while (conn->_file_left > 0) {
        size_t want = conn->_file_left > (1u << 30) ? (1u << 30) : (size_t)conn->_file_left;
        ssize_t n = sendfile(conn->_watcher.fd, conn->_file_fd, &conn->_file_off, want);
        if (n < 0) {
            int r = write_failed(conn);
            if (r <= 0)
                return r;
            continue;
        }
        if (n == 0) { /* the file shrank under us: the promised length cannot be kept */
            conn->broken = 1;
            return -1;
        }
        conn->_sent_total += (uint64_t)n;
        conn->_file_left -= (uint64_t)n;
    }
    if (conn->_file_fd >= 0) {
        close(conn->_file_fd);
        conn->_file_fd = -1;
    }
    return 0;
}

size_t up_conn_out_write_through(up_conn_t *conn, const char *data, size_t len)
{
    size_t queued = conn->_wbuf.len;
    struct iovec iov[2] = {{conn->_wbuf.base, queued}, {(void *)data, len}};
    struct msghdr msg = {.msg_iov = queued > 0 ? iov : iov + 1, .msg_iovlen = queued > 0 ? 2 : 1};
    ssize_t n;
    do {
        n = sendmsg(conn->_watcher.fd, &msg, MSG_NOSIGNAL);
    } while (n < 0 && write_failed(conn) == 1);
    if (n <= 0)
        return 0; /* socket full, or the client is gone (conn->broken): the caller queues it */
    size_t from_queue = (size_t)n < queued ? (size_t)n : queued;
    up_buffer_consume(&conn->_wbuf, from_queue);
    conn->_sent_total += (uint64_t)n;
    if (from_queue < queued)
        return 0;
    size_t from_data = (size_t)n - from_queue;
    conn->_out_total += from_data;
    return from_data;
}

int up_conn_flush_wait(up_conn_t *conn)
{
    for (;;) {
        if (conn->broken || flush_some(conn) != 0)
            return -1;
        if (up_conn_pending(conn) == 0)
            return 0;
        struct pollfd pfd = {.fd = conn->_watcher.fd, .events = POLLOUT};
        int r = poll(&pfd, 1, (int)conn->server->config.write_timeout_ms);
        if (r == 0 || (r < 0 && errno != EINTR)) {
            conn->broken = 1;
            return -1;
        }
    }
}

/* ---------------------------------------------------------------- life cycle */

static void conn_on_event(up_watcher_t *w, unsigned revents);

void up_conn_accept(up_server_t *server, const up_listener_t *listener, int fd,
                    const struct sockaddr *addr)
{
    up_conn_t *conn = up_calloc(1, sizeof(*conn));
    int one = 1;
    /* Responses are batched by the engine itself; Nagle would only add latency. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    conn->_watcher.fd = fd;
    conn->_watcher.cb = conn_on_event;
    conn->server = server;
    conn->listener = listener;
    conn->_file_fd = -1;
    conn->_state = UP_CONN_IDLE;
    up_request_body_init(&conn->req.body);
    unsigned port;
    up_format_address(addr, conn->remote_addr, sizeof(conn->remote_addr), &port, 0);
    conn->_next = server->conns;
    if (server->conns != NULL)
        server->conns->_prev = conn;
    server->conns = conn;
    server->num_conns++;
    /* The listener defers accept until data arrives, so the first request is usually here
     * already: read it now rather than after another trip through epoll. */
    conn_on_event(&conn->_watcher, UP_EV_READ);
}

void up_conn_close(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    up_loop_unwatch(server->loop, &conn->_watcher);
    close(conn->_watcher.fd);
    up_timer_disarm(&conn->_timer);
    if (conn->_file_fd >= 0)
        close(conn->_file_fd);
    up_request_body_reset(&conn->req.body, &server->pool);
    up_buffer_release(&conn->_rbuf, &server->pool);
    up_buffer_release(&conn->_wbuf, &server->pool);
    up_buffer_release(&conn->_headers, &server->pool);
    if (conn->_prev != NULL)
        conn->_prev->_next = conn->_next;
    else
        server->conns = conn->_next;
    if (conn->_next != NULL)
        conn->_next->_prev = conn->_prev;
    server->num_conns--;
    free(conn);
}

/* ---------------------------------------------------------------- requests */

/* Answers a request the engine refuses (4xx) and closes once that is written. */
static void reject(up_conn_t *conn, int status, const char *reason)
{
    up_request_body_reset(&conn->req.body, &conn->server->pool);
    conn->res = (up_response_state_t){0};
    conn->req.head.minor_version = 1;
    up_response_send_simple(conn, status, reason, 1);
    conn->_state = UP_CONN_CLOSING;
}

static const up_http1_limits_t *limits_of(up_conn_t *conn, up_http1_limits_t *limits)
{
    limits->max_head_size = conn->server->config.max_head_size;
    limits->max_headers = conn->server->config.max_headers;
    return limits;
}

static void request_done(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    if (!conn->res.finished) {
        /* The binding returned without finishing its response: nothing sane can follow it on
         * this connection. */
        if (up_response_rollback(conn) && !conn->res.started)
            up_response_send_simple(conn, 500, "Internal Server Error", 1);
        conn->res.keep_alive = 0;
    }
    conn->_queued++;
    up_request_body_reset(&conn->req.body, &server->pool);
    conn->_rpos = conn->_req_end;
    if (conn->_rpos == conn->_rbuf.len)
        conn->_rpos = conn->_rbuf.len = 0;
    conn->_last_len = 0;
    conn->_state = conn->res.keep_alive && !server->stopping && !conn->_force_close
                       ? UP_CONN_IDLE
                       : UP_CONN_CLOSING;
}

/* Returns 1 when the request was answered here, 0 when a binding thread has it now. */
static int dispatch(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    if (conn->_rbuf.base + conn->_rpos != conn->_head_at) {
        /* The read buffer moved while the body came in: the head's slices must follow it. */
        up_http1_limits_t limits;
        conn->req.head.headers = (up_http1_header_t *)conn->_headers.base;
        up_http1_parse_request(conn->_rbuf.base + conn->_rpos, conn->_rbuf.len - conn->_rpos, 0,
                               &conn->req.head, limits_of(conn, &limits));
    }
    conn->_state = UP_CONN_APP;
    up_timer_disarm(&conn->_timer);
    conn->_timer_kind = TIMER_NONE;
    up_response_reset(conn);
    if (server->handler.on_request(conn, server->handler.user) == UP_REQUEST_DEFERRED)
        return 0; /* another thread has it until up_conn_resume; see conn_on_event */
    request_done(conn);
    return 1;
}

/* Returns 1 to go on parsing, 0 to wait for more bytes or stop. */
static int handle_head(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    size_t avail = conn->_rbuf.len - conn->_rpos;
    if (avail == 0) {
        conn->_state = UP_CONN_IDLE;
        return 0;
    }
    if (conn->_headers.base == NULL)
        up_buffer_reserve(&conn->_headers, &server->pool,
                          server->config.max_headers * sizeof(up_http1_header_t));
    up_http1_request_t *head = &conn->req.head;
    up_http1_limits_t limits;
    head->headers = (up_http1_header_t *)conn->_headers.base;
    const char *at = conn->_rbuf.base + conn->_rpos;
    int r = up_http1_parse_request(at, avail, conn->_last_len, head, limits_of(conn, &limits));
    if (r == UP_HTTP1_INCOMPLETE) {
        conn->_last_len = avail;
        conn->_state = UP_CONN_HEAD;
        return 0;
    }
    if (r == UP_HTTP1_ERROR) {
        reject(conn, up_http1_error_status(head->error), up_http1_error_reason(head->error));
        return 0;
    }
    conn->_last_len = 0;
    conn->_head_at = at;
    conn->_body_pos = conn->_rpos + (size_t)r;
    uint64_t max_body = server->config.max_body_size;
    if (head->chunked) {
        memset(&conn->_chunked, 0, sizeof(conn->_chunked));
        conn->_chunked.max_body = max_body;
    } else if (head->content_length > 0) {
        if (max_body != 0 && (uint64_t)head->content_length > max_body) {
            reject(conn, 413, "Request body is larger than the server accepts");
            return 0;
        }
        conn->_body_left = (uint64_t)head->content_length;
    } else {
        conn->_req_end = conn->_body_pos;
        return dispatch(conn);
    }
    /* RFC 9110 §10.1.1: the client holds the body back until told to go on. */
    if (head->expect_continue && conn->_rbuf.len == conn->_body_pos)
        up_response_send_continue(conn);
    conn->_state = UP_CONN_BODY;
    return 1;
}

static int body_store(up_conn_t *conn, const char *src, size_t len, uint64_t expected)
{
    up_server_config_t *cfg = &conn->server->config;
    if (up_request_body_append(&conn->req.body, &conn->server->pool, src, len, expected,
                               cfg->spool_threshold, cfg->tmp_dir) == 0)
        return 0;
    if (conn->server->handler.on_log != NULL)
        conn->server->handler.on_log("cannot spool a request body to a temporary file",
                                     conn->server->handler.user);
    reject(conn, 500, "The request body could not be stored");
    return -1;
}

/* Returns 1 once the whole body is in and the request was dispatched and answered. */
static int handle_body(up_conn_t *conn)
{
    char *start = conn->_rbuf.base + conn->_body_pos;
    size_t avail = conn->_rbuf.len - conn->_body_pos;
    up_request_body_t *body = &conn->req.body;
    int untouched = body->len == 0 && body->fd < 0 && body->_buf.base == NULL;

    if (conn->req.head.chunked) {
        size_t len = avail;
        ssize_t r = up_chunked_decode(&conn->_chunked, start, &len);
        if (r == UP_CHUNKED_ERROR) {
            reject(conn, up_chunked_error_status(conn->_chunked.error),
                   up_chunked_error_reason(conn->_chunked.error));
            return 0;
        }
        if (r >= 0 && untouched) {
            up_request_body_borrow(body, start, len);
        } else if (len > 0 && body_store(conn, start, len, 0) != 0) {
            return 0;
        }
        if (r == UP_CHUNKED_INCOMPLETE) {
            conn->_rbuf.len = conn->_body_pos; /* decoded bytes are stored; drop them here */
            return 0;
        }
        conn->_req_end = conn->_body_pos + len;
        conn->_rbuf.len = conn->_req_end + (size_t)r; /* the next request was moved down */
    } else {
        size_t take = avail < conn->_body_left ? avail : (size_t)conn->_body_left;
        if (take == conn->_body_left && untouched) {
            up_request_body_borrow(body, start, take);
        } else if (take > 0 &&
                   body_store(conn, start, take, (uint64_t)conn->req.head.content_length) != 0) {
            return 0;
        }
        conn->_body_left -= take;
        if (conn->_body_left > 0) {
            conn->_rbuf.len = conn->_body_pos;
            return 0;
        }
        conn->_req_end = conn->_body_pos + take;
    }
    return dispatch(conn);
}

/* Parses and answers every complete request in the read buffer, as long as the output may
 * grow. Returns when more input is needed, the connection is closing, or a thread has it. */
static void handle_requests(up_conn_t *conn)
{
    unsigned max_pipeline = conn->server->config.max_pipeline;
    while (conn->_state != UP_CONN_APP && conn->_state != UP_CONN_CLOSING) {
        if (conn->_queued >= max_pipeline || conn->_file_fd >= 0)
            return;
        int go_on = conn->_state == UP_CONN_BODY ? handle_body(conn) : handle_head(conn);
        if (!go_on)
            return;
    }
}

/* ---------------------------------------------------------------- timers and interest */

static void arm_timer(up_conn_t *conn, int kind)
{
    up_server_t *server = conn->server;
    up_timer_list_t *list;
    switch (kind) {
    case TIMER_KEEPALIVE: list = &server->keepalive_timers; break;
    case TIMER_HEAD: list = &server->head_timers; break;
    case TIMER_BODY: list = &server->body_timers; break;
    case TIMER_WRITE: list = &server->write_timers; break;
    case TIMER_LINGER: list = &server->linger_timers; break;
    default:
        up_timer_disarm(&conn->_timer);
        conn->_timer_kind = TIMER_NONE;
        return;
    }
    /* The head and linger timers run from when their state began, so a client that trickles
     * bytes (slowloris) cannot push them back; the others measure a pause and restart on
     * progress. */
    if (kind == conn->_timer_kind && (kind == TIMER_HEAD || kind == TIMER_LINGER))
        return;
    up_timer_arm(list, &conn->_timer, up_loop_now(server->loop));
    conn->_timer_kind = kind;
}

/* After any progress: write what is queued, release what an idle connection need not hold,
 * and watch for what comes next. May close (and free) conn. */
static void settle(up_conn_t *conn)
{
    up_server_t *server = conn->server;
    if (up_conn_pending(conn) > 0 && flush_some(conn) != 0) {
        up_conn_close(conn);
        return;
    }
    int pending = up_conn_pending(conn) > 0;
    if (!pending) {
        conn->_queued = 0;
        up_buffer_release(&conn->_wbuf, &server->pool);
        if (conn->_state == UP_CONN_IDLE && conn->_rbuf.len == 0) {
            up_buffer_release(&conn->_rbuf, &server->pool);
            up_buffer_release(&conn->_headers, &server->pool);
        }
    }
    if (conn->_eof && !pending && conn->_state != UP_CONN_CLOSING) {
        /* The client stopped sending: what is complete was answered, the rest never will be. */
        up_conn_close(conn);
        return;
    }
    if (conn->_state == UP_CONN_CLOSING && !pending && !conn->_closing_output) {
        if (conn->_eof) {
            up_conn_close(conn);
            return;
        }
        /* Lingering close: half-close and drain, so the client reads our last response
         * instead of a reset caused by bytes it sent that we never read. */
        shutdown(conn->_watcher.fd, SHUT_WR);
        conn->_closing_output = 1;
    }

    unsigned events = pending ? UP_EV_WRITE : 0;
    int reading = conn->_state == UP_CONN_IDLE || conn->_state == UP_CONN_HEAD ||
                  conn->_state == UP_CONN_BODY;
    if ((reading && !conn->_eof && conn->_queued < server->config.max_pipeline &&
         conn->_file_fd < 0) ||
        conn->_closing_output)
        events |= UP_EV_READ;
    if (up_loop_watch(server->loop, &conn->_watcher, events) != 0) {
        up_conn_close(conn);
        return;
    }

    if (pending)
        arm_timer(conn, TIMER_WRITE);
    else if (conn->_closing_output)
        arm_timer(conn, TIMER_LINGER);
    else if (conn->_state == UP_CONN_IDLE)
        arm_timer(conn, TIMER_KEEPALIVE);
    else if (conn->_state == UP_CONN_HEAD)
        arm_timer(conn, TIMER_HEAD);
    else if (conn->_state == UP_CONN_BODY)
        arm_timer(conn, TIMER_BODY);
}

static void conn_process(up_conn_t *conn)
{
    for (;;) {
        handle_requests(conn);
        if (conn->_state == UP_CONN_APP)
            return;
        unsigned queued = conn->_queued;
        if (up_conn_pending(conn) > 0 && flush_some(conn) != 0) {
            up_conn_close(conn);
            return;
        }
        /* Output drained after the pipeline limit stopped parsing: go on with what is
         * already read before asking the loop for more. */
        if (queued >= conn->server->config.max_pipeline && up_conn_pending(conn) == 0 &&
            conn->_state != UP_CONN_CLOSING) {
            conn->_queued = 0;
            continue;
        }
        break;
    }
    settle(conn);
}

/* ---------------------------------------------------------------- events */

static void drain_input(up_conn_t *conn)
{
    char scratch[4096];
    for (;;) {
        ssize_t n = read(conn->_watcher.fd, scratch, sizeof(scratch));
        if (n > 0)
            continue;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        up_conn_close(conn);
        return;
    }
}

static void conn_read(up_conn_t *conn)
{
    up_buffer_t *b = &conn->_rbuf;
    if (conn->_rpos > 0 && conn->_state != UP_CONN_APP) {
        up_buffer_consume(b, conn->_rpos);
        conn->_body_pos -= conn->_rpos;
        conn->_rpos = 0;
    }
    if (b->base == NULL || b->len == b->cap)
        up_buffer_reserve(b, &conn->server->pool, b->base == NULL ? UP_BUFFER_CHUNK : b->cap);
    for (;;) {
        ssize_t n = read(conn->_watcher.fd, b->base + b->len, b->cap - b->len);
        if (n > 0) {
            b->len += (size_t)n;
            break;
        }
        if (n == 0) {
            conn->_eof = 1;
            break;
        }
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            break;
        up_conn_close(conn);
        return;
    }
    conn_process(conn);
}

static void conn_on_event(up_watcher_t *w, unsigned revents)
{
    up_conn_t *conn = (up_conn_t *)w;
    if (conn->_state == UP_CONN_APP) {
        /* An app thread owns the buffers until up_conn_resume. The watch stays on while it
         * runs, since taking it off and on again costs two syscalls a request, and is only
         * taken off when the socket would otherwise keep waking the loop (the client sent
         * more, or left); settle puts it back. */
        up_loop_watch(conn->server->loop, w, 0);
        return;
    }
    if (conn->_closing_output) {
        if (revents & UP_EV_READ)
            drain_input(conn);
        return;
    }
    if ((revents & UP_EV_READ) && !conn->_eof)
        conn_read(conn);
    else
        conn_process(conn);
}

/* ---------------------------------------------------------------- hand-back, timeouts, stop */

void up_conn_on_resume(up_conn_t *conn)
{
    request_done(conn);
    if (conn->_force_close) {
        up_conn_close(conn);
        return;
    }
    conn_process(conn);
}

void up_conn_on_timeout(up_conn_t *conn)
{
    int kind = conn->_timer_kind;
    up_timer_disarm(&conn->_timer);
    conn->_timer_kind = TIMER_NONE;
    if (kind == TIMER_HEAD || kind == TIMER_BODY) {
        reject(conn, 408, "The request took too long to arrive");
        settle(conn);
        return;
    }
    up_conn_close(conn);
}

void up_conn_stop(up_conn_t *conn)
{
    if (conn->_state == UP_CONN_APP) {
        return; /* request_done sees server->stopping and closes after this response */
    }
    if (conn->_state == UP_CONN_IDLE && up_conn_pending(conn) == 0 && conn->_rbuf.len == 0) {
        up_conn_close(conn);
        return;
    }
    if (conn->_state == UP_CONN_IDLE) {
        conn->_state = UP_CONN_CLOSING;
        settle(conn);
    }
}
