/* The WebSocket protocol of a connection; see websocket.h. */

#include <stdlib.h>
#include <string.h>
#include "base/memory.h"
#include "base/token.h"
#include "http1/http1.h"
#include "http1/response.h"
#include "http2/http2_tunnel.h"
#include "websocket/websocket.h"
#include "websocket/websocket_deflate.h"

struct up_ws_t {
    up_ws_reader_t reader;
    const up_upgrade_events_t *events;
    void *user;
    uint64_t max_message;
    /* permessage-deflate, when params.enabled: the client's compressed messages are inflated
     * into `inflated` (loop thread), ours compressed under send_lock. */
    up_ws_deflate_params_t params;
    up_ws_compressors_t *compressors;
    up_ws_inflater_t inflater;
    up_ws_deflater_t deflater;
    up_buffer_t inflated;
    /* The message being assembled (loop thread): an up_upgrade_message_t whose data grows as
     * payload comes, handed to the binding whole. */
    up_upgrade_message_t *msg;
    size_t msg_cap;
    up_utf8_state_t utf8;
    /* Loop thread. */
    unsigned sent_close : 1;     /* our Close is queued: nothing may follow it (§5.5.1) */
    unsigned ping_outstanding : 1;
    unsigned paused : 1;         /* not reading: UP_WS_MAX_INBOUND is with the binding */
    unsigned output_full : 1;    /* not reading: the client does not take what we send */
    unsigned close_code;         /* what on_close reports */
    unsigned ping_ms_armed;      /* the idle timer's duration now */
    /* Any thread. */
    atomic_uint ping_ms;
    atomic_uint close_request; /* the code up_ws_any_close asked for */
    _Atomic uint64_t inbound;  /* message bytes with the binding */
    up_upgrade_pending_t writes;
    atomic_int drain_wanted; /* pending was seen above 0: on_drained is owed */
    /* Held while a thread builds and posts a message, so that what is built in order (a
     * compression context's state) is posted in that order. */
    pthread_mutex_t send_lock;
};

/* ---------------------------------------------------------------- compressors */

/* A free list of compressors: a thread takes one for a message and gives it back, so each is
 * used by one thread at a time and a server holds as many as threads compressed at once. */
typedef struct compressor_t {
    up_ws_compressor_t c;
    struct compressor_t *next;
} compressor_t;

struct up_ws_compressors_t {
    pthread_mutex_t lock;
    compressor_t *free;
};

up_ws_compressors_t *up_ws_compressors_new(void)
{
    up_ws_compressors_t *pool = up_calloc(1, sizeof(*pool));
    pthread_mutex_init(&pool->lock, NULL);
    return pool;
}

void up_ws_compressors_free(up_ws_compressors_t *pool)
{
    if (pool == NULL)
        return;
    while (pool->free != NULL) {
        compressor_t *c = pool->free;
        pool->free = c->next;
        up_ws_compressor_dispose(&c->c);
        free(c);
    }
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

static compressor_t *take_compressor(up_ws_compressors_t *pool)
{
    pthread_mutex_lock(&pool->lock);
    compressor_t *c = pool->free;
    if (c != NULL)
        pool->free = c->next;
    pthread_mutex_unlock(&pool->lock);
    if (c == NULL) {
        c = up_calloc(1, sizeof(*c));
        up_ws_compressor_init(&c->c);
    }
    return c;
}

static void give_compressor(up_ws_compressors_t *pool, compressor_t *c)
{
    pthread_mutex_lock(&pool->lock);
    c->next = pool->free;
    pool->free = c;
    pthread_mutex_unlock(&pool->lock);
}

/* Our policy (websocket.h): an empty window both ways, any window size the client asks. */
static const up_ws_deflate_policy_t deflate_policy = {1, 1, 1, 0};

static up_ws_t *ws_of(up_conn_t *conn)
{
    return conn->protocol_data;
}

/* ---------------------------------------------------------------- the handshake */

/* The request's Sec-WebSocket-Extensions field lines, at most max of them. */
static size_t extension_offers(const up_http1_request_t *head, up_slice_t *values, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < head->num_headers && n < max; i++) {
        const up_http1_header_t *h = &head->headers[i];
        if (h->name.len == 24 && UP_LOWER_EQ(h->name.base, 24, "sec-websocket-extensions"))
            values[n++] = h->value;
    }
    return n;
}

up_ws_t *up_ws_lent_start_accept(up_exchange_t *ex, const up_ws_settings_t *settings)
{
    if (ex->req->upgrade != UP_UPGRADE_WEBSOCKET)
        return NULL;
    up_ws_t *ws = up_calloc(1, sizeof(*ws));
    ws->max_message = settings->max_message;
    atomic_init(&ws->ping_ms, settings->ping_ms);
    pthread_mutex_init(&ws->send_lock, NULL);
    if (ex->req->http2) {
        /* RFC 8441 §5: a 200 on the stream, with no key to answer. */
        up_response_start(ex, 200);
    } else {
        char accept[UP_WS_ACCEPT_LEN + 1];
        up_ws_accept_key(ex->req->ws_key.base, ex->req->ws_key.len, accept);
        up_response_start(ex, 101);
        up_response_add_header(ex, "upgrade", 7, "websocket", 9);
        up_response_add_header(ex, "connection", 10, "Upgrade", 7);
        up_response_add_header(ex, "sec-websocket-accept", 20, accept, UP_WS_ACCEPT_LEN);
    }
    if (settings->compressors != NULL) {
        up_slice_t offers[8];
        size_t n = extension_offers(&ex->req->head, offers, 8);
        char extension[UP_WS_DEFLATE_RESPONSE_MAX];
        size_t len = n == 0 ? 0
                            : up_ws_deflate_negotiate(&deflate_policy, offers, n, &ws->params,
                                                      extension, sizeof(extension));
        if (len > 0) {
            up_response_add_header(ex, "sec-websocket-extensions", 24, extension, len);
            ws->compressors = settings->compressors;
            up_ws_inflater_init(&ws->inflater, &ws->params,
                                ws->max_message > 0 ? (size_t)ws->max_message : SIZE_MAX);
            up_ws_deflater_init(&ws->deflater, &ws->params);
        }
    }
    return ws;
}

up_conn_t *up_ws_lent_accept(up_exchange_t *ex, up_ws_t *ws, const up_upgrade_events_t *events,
                             void *user)
{
    if (up_response_end_head(ex, -1) != UP_RESPONSE_OK) {
        up_ws_discard(ws);
        return NULL;
    }
    ws->events = events;
    ws->user = user;
    if (ex->req->http2)
        return up_http2_lent_tunnel(ex, &up_websocket_protocol, ws); /* ws goes with it */
    up_http1_switch_protocol(ex, &up_websocket_protocol, ws);
    up_conn_retain(ex->conn);
    return ex->conn;
}

void up_ws_discard(up_ws_t *ws)
{
    if (ws->params.enabled) {
        up_ws_inflater_dispose(&ws->inflater);
        up_ws_deflater_dispose(&ws->deflater);
    }
    pthread_mutex_destroy(&ws->send_lock);
    free(ws);
}

int up_ws_loop_takes_shared_deflate(up_conn_t *conn)
{
    up_ws_t *ws = ws_of(conn);
    return ws->params.enabled && up_ws_deflate_accepts_shared(&ws->params, 15);
}

/* ---------------------------------------------------------------- writing frames */

/* Appends a frame header to q. */
static void append_header(up_outq_t *q, up_buffer_pool_t *pool, int opcode, uint64_t len)
{
    uint8_t header[UP_WS_MAX_HEADER];
    size_t n = up_ws_frame_header(header, 1, 0, opcode, len);
    up_outq_append(q, pool, header, n);
}

/* A control frame written by the loop itself (pong, close), staged behind what is queued. */
static void loop_send_control(up_conn_t *conn, int opcode, const void *payload, size_t len)
{
    up_buffer_pool_t *pool = &conn->server->pool;
    append_header(&conn->_staged, pool, opcode, len);
    if (len > 0)
        up_outq_append(&conn->_staged, pool, payload, len);
}

/* Queues our Close (once) and closes after what is queued is written: from then on nothing
 * else is sent (RFC 6455 §5.5.1) and other threads' posts are refused (conn.h). */
static void loop_close(up_conn_t *conn, unsigned code, const char *reason)
{
    up_ws_t *ws = ws_of(conn);
    if (ws->sent_close)
        return;
    uint8_t payload[UP_WS_MAX_CONTROL_PAYLOAD];
    size_t len = code == UP_WS_CLOSE_NO_STATUS
                     ? 0
                     : up_ws_close_payload(payload, code, reason, reason ? strlen(reason) : 0);
    loop_send_control(conn, UP_WS_OP_CLOSE, payload, len);
    ws->sent_close = 1;
    if (ws->close_code == 0)
        ws->close_code = code;
    up_conn_loop_want_read(conn, 0);
    up_conn_loop_close_after_output(conn);
}

void up_ws_loop_close(up_conn_t *conn, unsigned code, const char *reason)
{
    loop_close(conn, code, reason);
}

/* The message compressed for this connection into *z (send_lock held): 1 when it goes with
 * RSV1, 0 when as it is. */
static int compress(up_ws_t *ws, up_buffer_pool_t *pool, const char *data, size_t len,
                    up_buffer_t *z)
{
    if (!ws->params.enabled)
        return 0;
    compressor_t *c = take_compressor(ws->compressors);
    int r = up_ws_deflate(&ws->deflater, &c->c, data, len, z, pool);
    give_compressor(ws->compressors, c);
    return r;
}

static int send_frame(up_conn_t *conn, int opcode, const char *data, up_shared_t *shared,
                      size_t offset, size_t len)
{
    up_ws_t *ws = ws_of(conn);
    up_buffer_pool_t *pool = &conn->server->pool;
    up_outq_t q;
    up_outq_init(&q);
    if (atomic_load(&ws->close_request) != 0)
        return -1; /* closing: nothing may follow the Close */
    pthread_mutex_lock(&ws->send_lock);
    up_buffer_t z = {0};
    const char *bytes = shared != NULL ? shared->base + offset : data;
    if (compress(ws, pool, bytes, len, &z)) {
        uint8_t header[UP_WS_MAX_HEADER];
        size_t n = up_ws_frame_header(header, 1, 1, opcode, z.len);
        up_outq_append(&q, pool, header, n);
        up_outq_append(&q, pool, z.base, z.len);
        up_buffer_release(&z, pool);
    } else {
        append_header(&q, pool, opcode, len);
        if (shared != NULL)
            up_outq_append_shared(&q, shared, offset, len);
        else if (len > 0)
            up_outq_append(&q, pool, data, len);
    }
    /* Counted first: the loop may drain it before this thread gets back here. */
    atomic_fetch_add(&ws->writes, 1);
    int r = up_conn_any_post(conn, &q);
    if (r != 0)
        atomic_fetch_sub(&ws->writes, 1);
    pthread_mutex_unlock(&ws->send_lock);
    return r;
}

int up_ws_any_send(up_conn_t *conn, int opcode, const char *data, size_t len)
{
    return send_frame(conn, opcode, data, NULL, 0, len);
}

int up_ws_any_send_shared(up_conn_t *conn, int opcode, up_shared_t *payload, size_t offset,
                          size_t len)
{
    return send_frame(conn, opcode, NULL, payload, offset, len);
}

int up_ws_any_close(up_conn_t *conn, unsigned code)
{
    up_ws_t *ws = ws_of(conn);
    unsigned expected = 0;
    atomic_compare_exchange_strong(&ws->close_request, &expected,
                                   up_ws_close_code_valid(code) ? code : UP_WS_CLOSE_NORMAL);
    return up_conn_any_request_close(conn);
}

long up_ws_any_pending(up_conn_t *conn)
{
    up_ws_t *ws = ws_of(conn);
    if (up_conn_any_state(conn) != UP_CONN_OPEN || atomic_load(&ws->close_request) != 0)
        return -1;
    long n = (long)atomic_load(&ws->writes);
    if (n > 0)
        atomic_store(&ws->drain_wanted, 1);
    return n;
}

void up_ws_any_consumed(up_conn_t *conn, size_t len)
{
    up_ws_t *ws = ws_of(conn);
    uint64_t before = atomic_fetch_sub(&ws->inbound, len);
    if (before >= UP_WS_MAX_INBOUND && before - len < UP_WS_MAX_INBOUND)
        up_conn_any_notify(conn); /* it may have stopped reading */
}

void up_ws_any_set_ping(up_conn_t *conn, unsigned ping_ms)
{
    atomic_store(&ws_of(conn)->ping_ms, ping_ms);
    up_conn_any_notify(conn);
}

unsigned up_ws_any_ping(up_conn_t *conn)
{
    return atomic_load(&ws_of(conn)->ping_ms);
}

/* ---------------------------------------------------------------- reading */

/* Fails the connection with the reader's error (or one found in a payload). */
static void fail(up_conn_t *conn, up_ws_error_t err)
{
    loop_close(conn, err.code, err.reason);
}

/* Room for n more bytes of the message being assembled; the message never grows past what
 * arrived (the reader refused a declared size over max_message before any of it came). */
static void grow_message(up_ws_t *ws, size_t n)
{
    size_t need = (ws->msg != NULL ? ws->msg->len : 0) + n;
    if (ws->msg != NULL && need <= ws->msg_cap)
        return;
    size_t cap = ws->msg_cap < 256 ? 256 : ws->msg_cap;
    while (cap < need)
        cap *= 2;
    if (ws->max_message > 0 && cap > ws->max_message)
        cap = need > ws->max_message ? need : (size_t)ws->max_message;
    up_upgrade_message_t *m = up_realloc(ws->msg, sizeof(*m) + cap);
    if (ws->msg == NULL)
        m->len = 0;
    ws->msg = m;
    ws->msg_cap = cap;
}

/* Hands the whole message to the binding; 1 when reading is to stop (the binding is behind). */
static int deliver(up_conn_t *conn, up_upgrade_message_t *msg)
{
    up_ws_t *ws = ws_of(conn);
    ws->utf8 = 0;
    if (atomic_fetch_add(&ws->inbound, msg->len) + msg->len >= UP_WS_MAX_INBOUND)
        ws->paused = 1;
    if (ws->events->on_message != NULL)
        ws->events->on_message(conn, ws->user, msg);
    else
        free(msg);
    return ws->paused; /* stop reading past the limit: the rest stays in _rbuf */
}

/* A run of a compressed message (RFC 7692 §6.2): inflated as it comes, bounded by the limit
 * while inflating, its text checked as it comes out. */
static int on_compressed(up_conn_t *conn, int opcode, const char *data, size_t len,
                         int message_fin)
{
    up_ws_t *ws = ws_of(conn);
    size_t before = ws->inflated.len;
    up_ws_inflate_result_t r =
        up_ws_inflate(&ws->inflater, data, len, message_fin, &ws->inflated, &conn->server->pool);
    if (r != UP_WS_INFLATE_OK) {
        up_ws_reader_fail(&ws->reader, (uint16_t)up_ws_inflate_close_code(r),
                          r == UP_WS_INFLATE_TOO_BIG ? "message too big"
                                                     : "invalid compressed data");
        return 1;
    }
    size_t added = ws->inflated.len - before;
    if (opcode == UP_WS_OP_TEXT && added > 0 &&
        up_utf8_validate(&ws->utf8, ws->inflated.base + before, added) != added) {
        up_ws_reader_fail(&ws->reader, UP_WS_CLOSE_INVALID_PAYLOAD, "invalid UTF-8 in a text message");
        return 1;
    }
    if (!message_fin)
        return 0;
    if (opcode == UP_WS_OP_TEXT && !up_utf8_complete(ws->utf8)) {
        up_ws_reader_fail(&ws->reader, UP_WS_CLOSE_INVALID_PAYLOAD, "text message ends inside a character");
        return 1;
    }
    up_upgrade_message_t *msg = up_malloc(sizeof(*msg) + ws->inflated.len);
    msg->len = ws->inflated.len;
    msg->binary = opcode == UP_WS_OP_BINARY;
    if (msg->len > 0)
        memcpy(msg->data, ws->inflated.base, msg->len);
    ws->inflated.len = 0;
    up_buffer_release(&ws->inflated, &conn->server->pool);
    return deliver(conn, msg);
}

static int ws_on_data(void *user, int opcode, int compressed, const char *data, size_t len,
                      int message_fin)
{
    up_conn_t *conn = user;
    up_ws_t *ws = ws_of(conn);
    if (compressed)
        return on_compressed(conn, opcode, data, len, message_fin);
    if (opcode == UP_WS_OP_TEXT && up_utf8_validate(&ws->utf8, data, len) != len) {
        up_ws_reader_fail(&ws->reader, UP_WS_CLOSE_INVALID_PAYLOAD, "invalid UTF-8 in a text message");
        return 1;
    }
    if (ws->max_message > 0 && (ws->msg ? ws->msg->len : 0) + len > ws->max_message) {
        up_ws_reader_fail(&ws->reader, UP_WS_CLOSE_MESSAGE_TOO_BIG, "message too big");
        return 1;
    }
    grow_message(ws, len);
    memcpy(ws->msg->data + ws->msg->len, data, len);
    ws->msg->len += len;
    if (!message_fin)
        return 0;
    if (opcode == UP_WS_OP_TEXT && !up_utf8_complete(ws->utf8)) {
        up_ws_reader_fail(&ws->reader, UP_WS_CLOSE_INVALID_PAYLOAD, "text message ends inside a character");
        return 1;
    }
    up_upgrade_message_t *msg = ws->msg;
    msg->binary = opcode == UP_WS_OP_BINARY;
    ws->msg = NULL;
    ws->msg_cap = 0;
    return deliver(conn, msg);
}

static int ws_on_control(void *user, int opcode, const char *payload, size_t len)
{
    up_conn_t *conn = user;
    up_ws_t *ws = ws_of(conn);
    switch (opcode) {
    case UP_WS_OP_PING:
        if (!ws->sent_close)
            loop_send_control(conn, UP_WS_OP_PONG, payload, len); /* §5.5.3 */
        return 0;
    case UP_WS_OP_PONG:
        return 0; /* any frame ends the ping's wait (ws_on_read) */
    case UP_WS_OP_CLOSE: {
        uint16_t code;
        const char *reason;
        size_t reason_len;
        up_ws_error_t err = up_ws_parse_close(payload, len, &code, &reason, &reason_len);
        if (err.code != 0) {
            up_ws_reader_fail(&ws->reader, err.code, err.reason);
            return 1;
        }
        /* §5.5.1: answer with a Close, the client's code echoed (none for none). */
        if (ws->close_code == 0)
            ws->close_code = code;
        loop_close(conn, code, NULL);
        return 1;
    }
    }
    return 0;
}

static const up_ws_reader_callbacks_t reader_callbacks = {ws_on_data, ws_on_control};

static void arm_ping(up_conn_t *conn)
{
    up_ws_t *ws = ws_of(conn);
    ws->ping_ms_armed = atomic_load(&ws->ping_ms);
    up_conn_loop_set_idle_timer(conn, ws->ping_ms_armed);
}

static void ws_on_start(up_conn_t *conn)
{
    up_ws_t *ws = ws_of(conn);
    if (conn->_rpos == conn->_rbuf.len) {
        /* The handshake's buffer: an idle WebSocket holds none. */
        conn->_rpos = 0;
        up_buffer_release(&conn->_rbuf, &conn->server->pool);
    }
    up_ws_reader_init(&ws->reader, &reader_callbacks, conn, ws->max_message,
                      ws->params.enabled ? UP_WS_READER_DEFLATE : 0);
    up_conn_loop_want_read(conn, 1);
    arm_ping(conn);
    if (ws->events->on_open != NULL)
        ws->events->on_open(conn, ws->user);
}

static void ws_on_read(up_conn_t *conn)
{
    up_ws_t *ws = ws_of(conn);
    up_buffer_t *b = &conn->_rbuf;
    size_t avail = b->len - conn->_rpos;
    if (avail > 0 && !ws->sent_close) {
        ws->ping_outstanding = 0;
        ssize_t r = up_ws_read(&ws->reader, b->base + conn->_rpos, avail);
        if (r == UP_WS_ERROR) {
            fail(conn, ws->reader.error);
            r = (ssize_t)avail;
        }
        conn->_rpos += (size_t)r;
    }
    if (ws->sent_close)
        conn->_rpos = b->len; /* nothing after our Close is read */
    if (conn->eof && !ws->sent_close) {
        /* Gone without a Close (§7.1.5: 1006). */
        ws->close_code = UP_WS_CLOSE_ABNORMAL;
        up_conn_loop_close(conn);
        return;
    }
    /* An idle WebSocket holds no read buffer (10,000 of them must fit in a few MB). */
    if (conn->_rpos == b->len) {
        conn->_rpos = 0;
        up_buffer_release(b, &conn->server->pool);
    } else {
        up_conn_loop_compact_input(conn);
    }
    /* A client that sends (pings, say) and never reads would grow our output without bound:
     * past the limit, its input waits in the kernel until it takes what we sent. */
    if (up_conn_any_backlog(conn) > UP_CONN_BACKLOG_LIMIT)
        ws->output_full = 1;
    up_conn_loop_want_read(conn, !ws->paused && !ws->output_full && !ws->sent_close);
}

static void ws_on_notify(up_conn_t *conn)
{
    up_ws_t *ws = ws_of(conn);
    if (ws->paused && atomic_load(&ws->inbound) < UP_WS_MAX_INBOUND) {
        ws->paused = 0;
        if (conn->_rbuf.len > conn->_rpos)
            ws_on_read(conn); /* what was read before the pause */
        else
            up_conn_loop_want_read(conn, !ws->output_full && !ws->sent_close);
    }
    if (atomic_load(&ws->ping_ms) != ws->ping_ms_armed && !ws->sent_close)
        arm_ping(conn);
}

static void ws_on_drained(up_conn_t *conn)
{
    up_ws_t *ws = ws_of(conn);
    if (ws->output_full) {
        ws->output_full = 0;
        if (conn->_rbuf.len > conn->_rpos)
            ws_on_read(conn); /* what was read before it stopped */
        else
            up_conn_loop_want_read(conn, !ws->paused && !ws->sent_close);
    }
    atomic_store(&ws->writes, 0);
    if (atomic_exchange(&ws->drain_wanted, 0) && !ws->sent_close &&
        ws->events->on_drained != NULL)
        ws->events->on_drained(conn, ws->user);
}

static void ws_on_resume(up_conn_t *conn)
{
    (void)conn; /* a WebSocket is never lent */
}

/* Idle for ping_ms: a ping; idle as long again after it: the client is gone. */
static void ws_on_timeout(up_conn_t *conn)
{
    up_ws_t *ws = ws_of(conn);
    if (ws->ping_outstanding) {
        loop_close(conn, UP_WS_CLOSE_GOING_AWAY, "no answer to a ping");
        return;
    }
    loop_send_control(conn, UP_WS_OP_PING, NULL, 0);
    ws->ping_outstanding = 1;
    arm_ping(conn);
}

static void ws_on_stop(up_conn_t *conn)
{
    up_ws_t *ws = ws_of(conn);
    if (ws->events->on_shutdown != NULL && !ws->sent_close)
        ws->events->on_shutdown(conn, ws->user);
    else
        loop_close(conn, UP_WS_CLOSE_GOING_AWAY, "server stopping");
}

static void ws_on_close_request(up_conn_t *conn)
{
    up_ws_t *ws = ws_of(conn);
    loop_close(conn, atomic_load(&ws->close_request), NULL);
}

static void ws_on_close(up_conn_t *conn)
{
    up_ws_t *ws = ws_of(conn);
    free(ws->msg);
    ws->msg = NULL;
    up_buffer_release(&ws->inflated, &conn->server->pool);
    if (ws->close_code == 0)
        ws->close_code = UP_WS_CLOSE_ABNORMAL;
    if (ws->events->on_close != NULL)
        ws->events->on_close(conn, ws->user, ws->close_code);
}

static void ws_on_free(up_conn_t *conn)
{
    up_ws_discard(ws_of(conn));
}

const up_protocol_t up_websocket_protocol = {
    .name = "websocket",
    .on_read = ws_on_read,
    .on_start = ws_on_start,
    .on_drained = ws_on_drained,
    .on_resume = ws_on_resume,
    .on_timeout = ws_on_timeout,
    .on_stop = ws_on_stop,
    .on_close_request = ws_on_close_request,
    .on_notify = ws_on_notify,
    .on_close = ws_on_close,
    .on_free = ws_on_free,
};
