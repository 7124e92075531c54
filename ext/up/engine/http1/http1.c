/* The HTTP/1.1 protocol: parse - read body - dispatch - answer, per connection. See http1.h. */

#include <string.h>
#include "core/conn.h"
#include "http1/http1.h"
#include "http1/response.h"
#include "http1/websocket_handshake.h"

_Static_assert(UP_MAX_HEAD_SIZE_LIMIT == UP_HTTP1_MAX_HEAD_SIZE_LIMIT,
               "the configured limit and the parser's agree");

static up_http1_t *h1_of(const up_conn_t *conn)
{
    return up_conn_protocol_state(conn);
}

/* ---------------------------------------------------------------- the exchange */

static up_exchange_t *ex_of(up_conn_t *conn)
{
    return &h1_of(conn)->exchange;
}

static up_http1_stream_t *stream_of(up_conn_t *conn)
{
    return (up_http1_stream_t *)h1_of(conn)->stream.base;
}

/* The stream of the request that begins, taken from the pool (see http1.h). */
static up_http1_stream_t *begin_stream(up_conn_t *conn)
{
    up_context_t *server = conn->server;
    up_buffer_t *buf = &h1_of(conn)->stream;
    if (buf->base == NULL) {
        up_buffer_reserve(buf, &server->pool,
                          sizeof(up_http1_stream_t) +
                              server->config.max_headers * sizeof(up_http1_header_t));
        up_http1_stream_t *x = stream_of(conn);
        memset(x, 0, sizeof(*x));
        up_request_body_init(&x->req.body);
        ex_of(conn)->req = &x->req;
        ex_of(conn)->res = &x->res;
        ex_of(conn)->stream = x;
    }
    return stream_of(conn);
}

/* Gives the stream back to the pool; the connection holds nothing for requests now. */
static void end_stream(up_conn_t *conn)
{
    up_context_t *server = conn->server;
    if (h1_of(conn)->stream.base == NULL)
        return;
    up_request_body_reset(&ex_of(conn)->req->body, &server->pool);
    up_buffer_release(&h1_of(conn)->stream, &server->pool);
    ex_of(conn)->req = NULL;
    ex_of(conn)->res = NULL;
    ex_of(conn)->stream = NULL;
}

/* ---------------------------------------------------------------- states */

/* Tells the connection what this state waits for: input and a timer, or nothing. */
static void settle_state(up_conn_t *conn)
{
    up_http1_t *h1 = h1_of(conn);
    up_context_t *server = conn->server;
    switch (h1->state) {
    case UP_HTTP1_IDLE:
        if (conn->eof) {
            /* The client stopped sending: what was complete is answered, nothing else will be. */
            h1->state = UP_HTTP1_CLOSING;
            up_conn_loop_close_after_output(conn);
            up_conn_loop_set_timer(conn, UP_TIMER_NONE);
            return;
        }
        if (conn->_rpos == conn->_rbuf.len) {
            /* Nothing buffered: an idle keep-alive connection holds no buffer at all. */
            conn->_rpos = conn->_rbuf.len = 0;
            up_buffer_release(&conn->_rbuf, &server->pool);
            end_stream(conn);
        }
        /* While max_pipeline responses wait, parsing stops, and so does reading: a client
         * that pipelines without reading cannot make the server buffer without bound. */
        up_conn_loop_want_read(conn, h1->queued < server->config.max_pipeline);
        up_conn_loop_set_timer(conn, UP_HTTP1_TIMER_KEEPALIVE);
        break;
    case UP_HTTP1_HEAD:
    case UP_HTTP1_BODY:
        if (conn->eof) {
            h1->state = UP_HTTP1_CLOSING;
            up_conn_loop_close_after_output(conn);
            up_conn_loop_set_timer(conn, UP_TIMER_NONE);
            return;
        }
        up_conn_loop_want_read(conn, h1->queued < server->config.max_pipeline);
        up_conn_loop_set_timer(conn, h1->state == UP_HTTP1_HEAD ? UP_TIMER_HEAD : UP_HTTP1_TIMER_BODY);
        break;
    case UP_HTTP1_APP:
        up_conn_loop_set_timer(conn, UP_TIMER_NONE);
        break;
    case UP_HTTP1_CLOSING:
        up_conn_loop_want_read(conn, 0);
        up_conn_loop_set_timer(conn, UP_TIMER_NONE);
        up_conn_loop_close_after_output(conn);
        break;
    }
}

/* Answers a request the engine refuses (4xx, 5xx) and closes once that is written. */
static void reject(up_conn_t *conn, int status, const char *reason)
{
    begin_stream(conn);
    up_request_body_reset(&ex_of(conn)->req->body, &conn->server->pool);
    *ex_of(conn)->res = (up_response_state_t){0};
    ex_of(conn)->req->head.minor_version = 1;
    up_response_send_simple(ex_of(conn), status, reason, 1);
    h1_of(conn)->state = UP_HTTP1_CLOSING;
}

static const up_http1_limits_t *limits_of(up_conn_t *conn, up_http1_limits_t *limits)
{
    limits->max_head_size = conn->server->config.max_head_size;
    limits->max_headers = conn->server->config.max_headers;
    return limits;
}

/* Hands the connection to the protocol up_http1_switch_protocol named, with the bytes after
 * this request. Returns 1 when it did: HTTP/1 must not touch the connection any more. */
static int switch_if_asked(up_conn_t *conn)
{
    up_http1_stream_t *x = stream_of(conn);
    const up_protocol_t *next = x->next_protocol;
    void *data = x->next_data;
    if (next == NULL)
        return 0;
    conn->_rpos = x->req_end;
    end_stream(conn);
    up_conn_loop_switch_protocol(conn, next, data);
    return 1;
}

void up_http1_switch_protocol(up_exchange_t *ex, const up_protocol_t *protocol, void *data)
{
    up_http1_stream_t *x = ex->stream;
    x->next_protocol = protocol;
    x->next_data = data;
}

up_slice_t up_http1_lent_unread(const up_exchange_t *ex)
{
    const up_conn_t *conn = ex->conn;
    const up_http1_stream_t *x = ex->stream;
    size_t end = x->req_end;
    return (up_slice_t){conn->_rbuf.base + end, conn->_rbuf.len - end};
}

/* The binding is done with the request: finish the books and move to the next one. Returns
 * 0, or 1 when the connection switched to another protocol. */
static int request_done(up_conn_t *conn)
{
    up_context_t *server = conn->server;
    up_http1_t *h1 = h1_of(conn);
    if (!ex_of(conn)->res->finished) {
        /* The binding returned without finishing its response: nothing sane can follow it on
         * this connection. */
        if (up_response_rollback(ex_of(conn)) && !ex_of(conn)->res->started)
            up_response_send_simple(ex_of(conn), 500, "Internal Server Error", 1);
        ex_of(conn)->res->keep_alive = 0;
        stream_of(conn)->next_protocol = NULL; /* a broken response is no way into another */
    }
    if (switch_if_asked(conn))
        return 1;
    h1->queued++;
    up_request_body_reset(&ex_of(conn)->req->body, &server->pool);
    up_http1_stream_t *x = stream_of(conn);
    conn->_rpos = x->req_end;
    x->last_len = 0;
    h1->state = ex_of(conn)->res->keep_alive && !server->stopping && !h1->close_requested
                    ? UP_HTTP1_IDLE
                    : UP_HTTP1_CLOSING;
    return 0;
}

/* Whether a media range list holds text/event-stream (RFC 9110 §12.5.1), parameters aside. */
static int accepts_event_stream(up_slice_t value)
{
    static const char type[] = "text/event-stream";
    const size_t len = sizeof(type) - 1;
    const char *p = value.base, *end = value.base + value.len;
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
            p++;
        const char *start = p;
        while (p < end && *p != ',' && *p != ';' && *p != ' ' && *p != '\t')
            p++;
        if ((size_t)(p - start) == len && UP_LOWER_EQ(start, len, type))
            return 1;
        while (p < end && *p != ',')
            p++; /* the range's parameters */
    }
    return 0;
}

int up_http1_accepts_events(const up_http1_request_t *head)
{
    for (size_t i = 0; i < head->num_headers; i++) {
        const up_http1_header_t *h = &head->headers[i];
        if (h->name.len == 6 && UP_LOWER_EQ(h->name.base, 6, "accept") &&
            accepts_event_stream(h->value))
            return 1;
    }
    return 0;
}

/* A WebSocket handshake's result (websocket_handshake.h), and in *key the Sec-WebSocket-Key
 * slice when it is OK. */
static up_ws_handshake_result_t check_websocket(const up_http1_request_t *head, up_slice_t *key)
{
    up_ws_handshake_t h;
    up_ws_handshake_init(&h);
    for (size_t i = 0; i < head->num_headers; i++)
        up_ws_handshake_header(&h, head->headers[i].name, head->headers[i].value);
    up_ws_handshake_result_t r = up_ws_handshake_check(&h, head->method, head->minor_version);
    if (r == UP_WS_HANDSHAKE_OK)
        *key = h.key;
    return r;
}

/* Refuses a bad handshake with 400 (and Sec-WebSocket-Version: 13 for a wrong version), then
 * closes. */
static void refuse_websocket(up_conn_t *conn, up_ws_handshake_result_t result)
{
    const char *reason = up_ws_handshake_reason(result);
    size_t len = strlen(reason);
    ex_of(conn)->res->keep_alive = 0;
    up_response_start(ex_of(conn), up_ws_handshake_status(result));
    if (result == UP_WS_HANDSHAKE_BAD_VERSION)
        up_response_add_header(ex_of(conn), "sec-websocket-version", 21, UP_WS_VERSION, 2);
    up_response_add_header(ex_of(conn), "content-type", 12, "text/plain; charset=utf-8", 25);
    up_response_end_head(ex_of(conn), (int64_t)len + 1);
    up_response_write(ex_of(conn), reason, len);
    up_response_write(ex_of(conn), "\n", 1);
    up_response_finish(ex_of(conn));
}

/* What the request may become (a WebSocket, an event stream), for the binding. Returns 1 when
 * it asked for a WebSocket with a bad handshake: refused here, with a 400. */
static int classify_upgrade(up_conn_t *conn)
{
    up_request_t *req = ex_of(conn)->req;
    req->upgrade = UP_UPGRADE_NONE;
    if (req->head.upgrade) {
        up_ws_handshake_result_t r = check_websocket(&req->head, &req->ws_key);
        if (r == UP_WS_HANDSHAKE_OK) {
            req->upgrade = UP_UPGRADE_WEBSOCKET;
            return 0;
        }
        if (up_ws_handshake_status(r) != 0) {
            up_response_reset(ex_of(conn));
            refuse_websocket(conn, r);
            return 1;
        }
    }
    if (up_http1_accepts_events(&req->head))
        req->upgrade = UP_UPGRADE_SSE;
    return 0;
}

/* The handler chain found no handler for the request: it goes to the app. */
static void lend(up_exchange_t *ex)
{
    up_conn_t *conn = ex->conn;
    h1_of(conn)->state = UP_HTTP1_APP;
    up_conn_loop_set_timer(conn, UP_TIMER_NONE);
    /* Responses to earlier pipelined requests go out now, not after this one's app call. */
    up_conn_loop_commit(conn);
    up_conn_loop_lend(conn);
}

/* Hands a complete request to the handler chain (core/context.h). Returns 1 when it was
 * answered and the connection goes on, 0 when the binding lent it to a thread (or the
 * connection is no longer HTTP/1's). */
static int dispatch(up_conn_t *conn)
{
    up_context_t *server = conn->server;
    up_http1_t *h1 = h1_of(conn);
    up_http1_stream_t *x = stream_of(conn);
    if (conn->_rbuf.base + conn->_rpos != x->head_at) {
        /* The read buffer moved while the body came in: the head's slices must follow it. */
        up_http1_limits_t limits;
        ex_of(conn)->req->head.headers = x->headers;
        up_http1_parse_request(conn->_rbuf.base + conn->_rpos, conn->_rbuf.len - conn->_rpos, 0,
                               &ex_of(conn)->req->head, limits_of(conn, &limits));
    }
    if (classify_upgrade(conn)) {
        h1->state = UP_HTTP1_CLOSING;
        return 0; /* a bad WebSocket handshake was refused */
    }
    up_response_reset(ex_of(conn));
    switch (up_server_loop_handle(server, ex_of(conn), lend)) {
    case UP_HANDLED_HERE:
        return request_done(conn) ? 0 : 1;
    case UP_HANDLED_DEFERRED:
        return 0;
    case UP_HANDLED_DONE:
        break;
    }
    if (up_conn_loop_reclaim(conn) != 0 || request_done(conn))
        return 0;
    return 1;
}

/* Returns 1 to go on parsing, 0 to wait for more bytes or stop. */
static int handle_head(up_conn_t *conn)
{
    up_context_t *server = conn->server;
    up_http1_t *h1 = h1_of(conn);
    size_t avail = conn->_rbuf.len - conn->_rpos;
    if (avail == 0) {
        h1->state = UP_HTTP1_IDLE;
        return 0;
    }
    up_http1_stream_t *x = begin_stream(conn);
    up_http1_request_t *head = &ex_of(conn)->req->head;
    up_http1_limits_t limits;
    head->headers = x->headers;
    const char *at = conn->_rbuf.base + conn->_rpos;
    int r = up_http1_parse_request(at, avail, x->last_len, head, limits_of(conn, &limits));
    if (r == UP_HTTP1_INCOMPLETE) {
        if (conn->_rpos > 0) {
            /* Move the partial head to the front, so the buffer does not grow with every
             * pipelined request before it. */
            memmove(conn->_rbuf.base, at, avail);
            conn->_rbuf.len = avail;
            conn->_rpos = 0;
        }
        x->last_len = avail;
        h1->state = UP_HTTP1_HEAD;
        return 0;
    }
    if (r == UP_HTTP1_ERROR) {
        reject(conn, up_http1_error_status(head->error), up_http1_error_reason(head->error));
        return 0;
    }
    x->last_len = 0;
    x->head_at = at;
    x->body_pos = conn->_rpos + (size_t)r;
    uint64_t max_body = server->config.max_body_size;
    if (head->chunked) {
        memset(&x->chunked, 0, sizeof(x->chunked));
        x->chunked.max_body = max_body;
    } else if (head->content_length > 0) {
        if (max_body != 0 && (uint64_t)head->content_length > max_body) {
            reject(conn, 413, "Request body is larger than the server accepts");
            return 0;
        }
        x->body_left = (uint64_t)head->content_length;
    } else {
        x->req_end = x->body_pos;
        return dispatch(conn);
    }
    /* RFC 9110 §10.1.1: the client holds the body back until told to go on. */
    if (head->expect_continue && conn->_rbuf.len == x->body_pos)
        up_response_send_continue(ex_of(conn));
    h1->state = UP_HTTP1_BODY;
    return 1;
}

static int body_store(up_conn_t *conn, const char *src, size_t len, uint64_t expected)
{
    up_server_config_t *cfg = &conn->server->config;
    if (up_request_body_append(&ex_of(conn)->req->body, &conn->server->pool, src, len, expected,
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
    up_http1_stream_t *x = stream_of(conn);
    char *start = conn->_rbuf.base + x->body_pos;
    size_t avail = conn->_rbuf.len - x->body_pos;
    up_request_t *req = ex_of(conn)->req;
    up_request_body_t *body = &req->body;
    int untouched = body->len == 0 && body->fd < 0 && body->_buf.base == NULL;

    if (req->head.chunked) {
        size_t len = avail;
        ssize_t r = up_chunked_decode(&x->chunked, start, &len);
        if (r == UP_CHUNKED_ERROR) {
            reject(conn, up_chunked_error_status(x->chunked.error),
                   up_chunked_error_reason(x->chunked.error));
            return 0;
        }
        if (r >= 0 && untouched) {
            up_request_body_borrow(body, start, len);
        } else if (len > 0 && body_store(conn, start, len, 0) != 0) {
            return 0;
        }
        if (r == UP_CHUNKED_INCOMPLETE) {
            conn->_rbuf.len = x->body_pos; /* decoded bytes are stored; drop them here */
            return 0;
        }
        x->req_end = x->body_pos + len;
        conn->_rbuf.len = x->req_end + (size_t)r; /* the next request was moved down */
    } else {
        size_t take = avail < x->body_left ? avail : (size_t)x->body_left;
        if (take == x->body_left && untouched) {
            up_request_body_borrow(body, start, take);
        } else if (take > 0 &&
                   body_store(conn, start, take, (uint64_t)req->head.content_length) != 0) {
            return 0;
        }
        x->body_left -= take;
        if (x->body_left > 0) {
            conn->_rbuf.len = x->body_pos;
            return 0;
        }
        x->req_end = x->body_pos + take;
    }
    return dispatch(conn);
}

/* Parses and answers every complete request in the read buffer while the output may grow.
 * Returns when more input is needed, the connection is closing, or a thread has the request. */
static void handle_requests(up_conn_t *conn)
{
    up_http1_t *h1 = h1_of(conn);
    unsigned max_pipeline = conn->server->config.max_pipeline;
    while (h1->state != UP_HTTP1_APP && h1->state != UP_HTTP1_CLOSING &&
           h1->queued < max_pipeline) {
        int go_on = h1->state == UP_HTTP1_BODY ? handle_body(conn) : handle_head(conn);
        if (conn->protocol != &up_http1_protocol)
            return; /* switched after a response: the connection is another protocol's now */
        if (!go_on)
            break;
    }
    settle_state(conn);
}

/* ---------------------------------------------------------------- protocol callbacks */

static void http1_on_read(up_conn_t *conn)
{
    handle_requests(conn);
}

static void http1_on_drained(up_conn_t *conn)
{
    up_http1_t *h1 = h1_of(conn);
    if (h1->state == UP_HTTP1_APP)
        return; /* the producer of a lent exchange waits with up_conn_any_wait_backlog */
    /* Responses held back by the pipeline limit are out: go on with what is already read. */
    h1->queued = 0;
    handle_requests(conn);
}

static void http1_on_resume(up_conn_t *conn)
{
    if (!request_done(conn))
        handle_requests(conn);
}

static void http1_on_timeout(up_conn_t *conn)
{
    up_http1_t *h1 = h1_of(conn);
    if (h1->state == UP_HTTP1_HEAD || h1->state == UP_HTTP1_BODY) {
        reject(conn, 408, "The request took too long to arrive");
        settle_state(conn);
        return;
    }
    up_conn_loop_close(conn);
}

/* No more requests: an idle connection closes (after what is queued), a busy one after its
 * response (request_done), one still in its transport's handshake after its first. */
static void stop_taking_requests(up_conn_t *conn)
{
    up_http1_t *h1 = h1_of(conn);
    if (h1->state != UP_HTTP1_IDLE)
        return;
    if (conn->transport->handshaking(conn)) {
        /* A handshake is the start of a first request, as a partial head is: the request
         * that follows is answered, then the connection closes (request_done sees the stop).
         * The handshake runs on the head timer; so does the wait for that request, rather
         * than keep-alive's, and an idle close ends it. */
        up_conn_loop_set_timer(conn, UP_TIMER_HEAD);
        return;
    }
    if (up_outq_empty(&conn->_out) && conn->_rbuf.len == conn->_rpos) {
        up_conn_loop_close(conn);
        return;
    }
    h1->state = UP_HTTP1_CLOSING;
    settle_state(conn);
    up_conn_loop_update(conn);
}

static void http1_on_stop(up_conn_t *conn)
{
    stop_taking_requests(conn); /* request_done sees server->stopping */
}

static void http1_on_close_request(up_conn_t *conn)
{
    h1_of(conn)->close_requested = 1; /* for request_done */
    stop_taking_requests(conn);
}

static void http1_on_notify(up_conn_t *conn)
{
    (void)conn; /* HTTP/1 shares nothing with other threads but lent exchanges */
}

static void http1_on_close(up_conn_t *conn)
{
    end_stream(conn);
}

void up_http1_init_timers(up_context_t *server)
{
    up_timer_list_init(&server->timers[UP_HTTP1_TIMER_KEEPALIVE],
                       server->config.keepalive_timeout_ms);
    up_timer_list_init(&server->timers[UP_HTTP1_TIMER_BODY], server->config.body_timeout_ms);
}

void up_http1_start(up_conn_t *conn)
{
    h1_of(conn)->state = UP_HTTP1_IDLE;
    ex_of(conn)->conn = conn;
    up_conn_loop_want_read(conn, 1);
    up_conn_loop_set_timer(conn, UP_HTTP1_TIMER_KEEPALIVE);
}

const up_protocol_t up_http1_protocol = {
    .name = "http/1.1",
    .conn_state_size = sizeof(up_http1_t),
    .on_read = http1_on_read,
    .on_start = up_http1_start,
    .on_drained = http1_on_drained,
    .on_resume = http1_on_resume,
    .on_timeout = http1_on_timeout,
    .on_stop = http1_on_stop,
    .on_close_request = http1_on_close_request,
    .on_notify = http1_on_notify,
    .on_close = http1_on_close,
};
