/* Server-Sent Events on a connection; see sse.h. */

#include <stdlib.h>
#include <string.h>
#include "base/memory.h"
#include "base/token.h"
#include "http1/http1.h"
#include "http1/response.h"
#include "http2/http2_tunnel.h"
#include "sse/sse.h"

typedef struct up_sse_t {
    const up_upgrade_events_t *events;
    void *user;
    unsigned heartbeat_ms;
    up_upgrade_pending_t writes;
    atomic_int drain_wanted; /* pending was seen above 0: on_drained is owed */
    atomic_int closing;      /* up_sse_any_close was called: nothing more is sent */
} up_sse_t;

static up_sse_t *sse_of(up_conn_t *conn)
{
    return conn->protocol_data;
}

/* ---------------------------------------------------------------- the request */

int up_sse_lent_start_accept(up_exchange_t *ex)
{
    if (ex->req->upgrade != UP_UPGRADE_SSE)
        return -1;
    up_response_start(ex, 200);
    up_response_add_header(ex, "content-type", 12, "text/event-stream", 17);
    up_response_add_header(ex, "cache-control", 13, "no-cache", 8);
    return 0;
}

up_conn_t *up_sse_lent_accept(up_exchange_t *ex, unsigned heartbeat_ms,
                              const up_upgrade_events_t *events, void *user)
{
    if (ex->req->upgrade != UP_UPGRADE_SSE ||
        up_response_end_head(ex, UP_RESPONSE_OPEN_STREAM) != UP_RESPONSE_OK)
        return NULL;
    up_sse_t *sse = up_calloc(1, sizeof(*sse));
    sse->events = events;
    sse->user = user;
    sse->heartbeat_ms = heartbeat_ms;
    if (ex->req->http2)
        return up_http2_lent_tunnel(ex, &up_sse_protocol, sse); /* sse goes with it */
    up_response_finish(ex);
    up_http1_switch_protocol(ex, &up_sse_protocol, sse);
    up_conn_retain(ex->conn);
    return ex->conn;
}

/* ---------------------------------------------------------------- events */

static int field_ok(const char *v, size_t len)
{
    if (len > UP_SSE_MAX_FIELD)
        return 0;
    for (size_t i = 0; i < len; i++) {
        if (v[i] == '\r' || v[i] == '\n' || v[i] == '\0')
            return 0;
    }
    return 1;
}

static void append_field(up_outq_t *q, up_buffer_pool_t *pool, const char *name, size_t name_len,
                         const char *value, size_t len)
{
    up_outq_append(q, pool, name, name_len);
    up_outq_append(q, pool, value, len);
    up_outq_append(q, pool, "\n", 1);
}

int up_sse_any_send(up_conn_t *conn, const char *event, size_t event_len, const char *id,
                    size_t id_len, const char *data, size_t data_len)
{
    if ((event != NULL && !field_ok(event, event_len)) || (id != NULL && !field_ok(id, id_len)))
        return -2;
    up_sse_t *sse = sse_of(conn);
    if (atomic_load(&sse->closing))
        return -1;
    up_buffer_pool_t *pool = &conn->server->pool;
    up_outq_t q;
    up_outq_init(&q);
    if (id != NULL)
        append_field(&q, pool, "id: ", 4, id, id_len);
    if (event != NULL)
        append_field(&q, pool, "event: ", 7, event, event_len);
    /* Each line of data its own field; a line ends at CR, LF or CRLF, as the client splits. */
    const char *p = data, *end = data + data_len;
    for (;;) {
        const char *eol = p;
        while (eol < end && *eol != '\r' && *eol != '\n')
            eol++;
        append_field(&q, pool, "data: ", 6, p, (size_t)(eol - p));
        if (eol == end)
            break;
        if (*eol == '\r' && eol + 1 < end && eol[1] == '\n')
            eol++;
        p = eol + 1;
    }
    up_outq_append(&q, pool, "\n", 1); /* the blank line dispatches the event */
    atomic_fetch_add(&sse->writes, 1);
    int r = up_conn_any_post(conn, &q);
    if (r != 0)
        atomic_fetch_sub(&sse->writes, 1);
    return r;
}

int up_sse_any_close(up_conn_t *conn)
{
    atomic_store(&sse_of(conn)->closing, 1);
    return up_conn_any_request_close(conn);
}

long up_sse_any_pending(up_conn_t *conn)
{
    up_sse_t *sse = sse_of(conn);
    if (up_conn_any_state(conn) != UP_CONN_OPEN || atomic_load(&sse->closing))
        return -1;
    long n = (long)atomic_load(&sse->writes);
    if (n > 0)
        atomic_store(&sse->drain_wanted, 1);
    return n;
}

/* ---------------------------------------------------------------- the protocol */

static void sse_on_start(up_conn_t *conn)
{
    up_sse_t *sse = sse_of(conn);
    conn->_rpos = 0; /* nothing after the request is the stream's: an idle one holds no buffer */
    up_buffer_release(&conn->_rbuf, &conn->server->pool);
    up_conn_loop_want_read(conn, 1);
    up_conn_loop_set_idle_timer(conn, sse->heartbeat_ms);
    if (sse->events->on_open != NULL)
        sse->events->on_open(conn, sse->user);
}

/* The client has nothing to say: drop it, and notice when it leaves. */
static void sse_on_read(up_conn_t *conn)
{
    if (conn->eof) {
        up_conn_loop_close(conn);
        return;
    }
    conn->_rpos = 0;
    conn->_rbuf.len = 0;
    up_buffer_release(&conn->_rbuf, &conn->server->pool);
}

/* Nothing written for heartbeat_ms: a comment line keeps proxies from closing the stream. */
static void sse_on_timeout(up_conn_t *conn)
{
    up_outq_append(&conn->_staged, &conn->server->pool, ":\n\n", 3);
    up_conn_loop_set_idle_timer(conn, sse_of(conn)->heartbeat_ms);
}

static void sse_on_drained(up_conn_t *conn)
{
    up_sse_t *sse = sse_of(conn);
    atomic_store(&sse->writes, 0);
    if (atomic_exchange(&sse->drain_wanted, 0) && sse->events->on_drained != NULL)
        sse->events->on_drained(conn, sse->user);
}

static void sse_on_nothing(up_conn_t *conn)
{
    (void)conn;
}

static void sse_on_stop(up_conn_t *conn)
{
    up_sse_t *sse = sse_of(conn);
    if (sse->events->on_shutdown != NULL)
        sse->events->on_shutdown(conn, sse->user);
    else
        up_conn_loop_close_after_output(conn);
}

void up_sse_loop_close(up_conn_t *conn)
{
    atomic_store(&sse_of(conn)->closing, 1);
    up_conn_loop_want_read(conn, 0);
    up_conn_loop_close_after_output(conn);
}

static void sse_on_close_request(up_conn_t *conn)
{
    up_sse_loop_close(conn);
}

static void sse_on_close(up_conn_t *conn)
{
    up_sse_t *sse = sse_of(conn);
    if (sse->events->on_close != NULL)
        sse->events->on_close(conn, sse->user, 0);
}

static void sse_on_free(up_conn_t *conn)
{
    free(sse_of(conn));
}

const up_protocol_t up_sse_protocol = {
    .name = "sse",
    .on_read = sse_on_read,
    .on_start = sse_on_start,
    .on_drained = sse_on_drained,
    .on_resume = sse_on_nothing,
    .on_timeout = sse_on_timeout,
    .on_stop = sse_on_stop,
    .on_close_request = sse_on_close_request,
    .on_notify = sse_on_nothing,
    .on_close = sse_on_close,
    .on_free = sse_on_free,
};
