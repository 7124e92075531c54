/* A stream as a carried connection's transport; see http2_tunnel.h. Empty without HTTP/2
 * (UP_HAVE_NGHTTP2), as http2.c is. */

#ifdef UP_HAVE_NGHTTP2

#include "http2/http2_tunnel.h"
#include "base/memory.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct up_http2_tunnel_t {
    up_conn_t *conn;
    void *stream;   /* http2.c's, until the tunnel lets go of it or it is gone */
    up_buffer_t in; /* DATA received and not read yet: the stream's window bounds it */
    size_t in_pos;
    unsigned started : 1;
    unsigned ended : 1;    /* END_STREAM came */
    unsigned eof_told : 1; /* a read returned it */
    unsigned gone : 1;     /* the stream closed or the session is closing */
    unsigned shut : 1;     /* our END_STREAM is asked for */
};

static up_http2_tunnel_t *tunnel_of(up_conn_t *conn)
{
    return conn->transport_data;
}

/* ---------------------------------------------------------------- the transport */

static int tunnel_open(up_conn_t *conn, void *ctx)
{
    (void)conn;
    (void)ctx;
    return 0;
}

static ssize_t tunnel_read(up_conn_t *conn, void *buf, size_t len)
{
    up_http2_tunnel_t *t = tunnel_of(conn);
    size_t avail = t->in.len - t->in_pos;
    if (avail == 0) {
        if (t->ended) {
            t->eof_told = 1;
            return 0;
        }
        if (t->gone) {
            errno = ECONNRESET;
            return UP_IO_ERROR;
        }
        return UP_IO_AGAIN;
    }
    size_t n = avail < len ? avail : len;
    memcpy(buf, t->in.base + t->in_pos, n);
    t->in_pos += n;
    if (t->in_pos == t->in.len) {
        t->in_pos = 0;
        up_buffer_release(&t->in, &conn->server->pool);
    }
    if (t->stream != NULL)
        up_http2_stream_consume(t->stream, n);
    return (ssize_t)n;
}

static ssize_t tunnel_writev(up_conn_t *conn, const struct iovec *iov, int iovcnt)
{
    up_http2_tunnel_t *t = tunnel_of(conn);
    if (t->stream == NULL || t->gone) {
        errno = EPIPE;
        return UP_IO_ERROR;
    }
    uint64_t unframed = up_http2_stream_unframed(t->stream);
    if (unframed >= UP_HTTP2_TUNNEL_OUTPUT)
        return UP_IO_AGAIN;
    ssize_t n =
        up_http2_stream_append(t->stream, iov, iovcnt, (size_t)(UP_HTTP2_TUNNEL_OUTPUT - unframed));
    if (n < 0) {
        errno = EPIPE;
        return UP_IO_ERROR;
    }
    return n == 0 ? UP_IO_AGAIN : n;
}

static ssize_t tunnel_sendfile(up_conn_t *conn, int fd, off_t *offset, size_t len)
{
    (void)conn;
    (void)fd;
    (void)offset;
    (void)len;
    errno = ENOTSUP; /* WebSocket and SSE output is in memory */
    return UP_IO_ERROR;
}

/* Bytes handed to the stream count as sent only once framed: the connection's write timer
 * runs, and its close waits, while a client does not read its stream. */
static ssize_t tunnel_flush(up_conn_t *conn)
{
    up_http2_tunnel_t *t = tunnel_of(conn);
    if (t->stream == NULL || t->gone)
        return t->shut ? 0 : UP_IO_ERROR;
    return up_http2_stream_unframed(t->stream) > 0 ? UP_IO_AGAIN : 0;
}

static int tunnel_pending(up_conn_t *conn)
{
    up_http2_tunnel_t *t = tunnel_of(conn);
    return t->in.len > t->in_pos || (t->ended && !t->eof_told) || (t->gone && !t->ended);
}

static int tunnel_handshaking(up_conn_t *conn)
{
    (void)conn;
    return 0;
}

static void tunnel_shutdown(up_conn_t *conn)
{
    up_http2_tunnel_t *t = tunnel_of(conn);
    t->shut = 1;
    if (t->stream != NULL)
        up_http2_stream_end(t->stream);
}

static void tunnel_free(up_http2_tunnel_t *t, up_buffer_pool_t *pool)
{
    up_buffer_release(&t->in, pool);
    free(t);
}

/* Lets go of a stream still open: the connection closed before both ends ended it (a write
 * timeout, a slow subscriber, a client that half-closed, the linger's end), so the stream is
 * reset; the connection's other streams go on. */
static void tunnel_close(up_conn_t *conn)
{
    up_http2_tunnel_t *t = tunnel_of(conn);
    if (t->stream != NULL)
        up_http2_stream_detach(t->stream);
    conn->transport_data = NULL;
    tunnel_free(t, &conn->server->pool);
}

static int tunnel_detach(up_conn_t *conn)
{
    (void)conn;
    return -1;
}

static unsigned tunnel_events(up_conn_t *conn, unsigned wanted)
{
    (void)conn;
    return wanted;
}

/* What conn.c wants is kept in conn->_watcher.events; input and room come through wake (the
 * calls below): the deferred update reads while pending holds. */
static void tunnel_watch(up_conn_t *conn, unsigned events)
{
    (void)conn;
    (void)events;
}

static void tunnel_no_context(void *ctx)
{
    (void)ctx;
}

static const up_transport_t tunnel_transport = {
    .name = "h2-stream",
    .scheme = "https",
    .secure = 1,
    .open = tunnel_open,
    .read = tunnel_read,
    .writev = tunnel_writev,
    .sendfile = tunnel_sendfile,
    .flush = tunnel_flush,
    .pending = tunnel_pending,
    .handshaking = tunnel_handshaking,
    .shutdown = tunnel_shutdown,
    .close = tunnel_close,
    .detach = tunnel_detach,
    .events = tunnel_events,
    .watch = tunnel_watch,
    .retain_context = tunnel_no_context,
    .release_context = tunnel_no_context,
};

/* ---------------------------------------------------------------- the stream's side */

up_http2_tunnel_t *up_http2_tunnel_new(up_exchange_t *ex, void *stream,
                                       const up_protocol_t *protocol, void *data)
{
    up_http2_tunnel_t *t = up_calloc(1, sizeof(*t));
    t->stream = stream;
    up_conn_t *parent = ex->conn;
    t->conn = up_conn_new_carried(parent->server, parent->listener, &tunnel_transport, t,
                                  parent->remote_addr, protocol, data);
    return t;
}

up_conn_t *up_http2_tunnel_conn(up_http2_tunnel_t *t)
{
    return t->conn;
}

void up_http2_tunnel_discard(up_http2_tunnel_t *t)
{
    up_conn_t *conn = t->conn;
    conn->transport_data = NULL;
    tunnel_free(t, &conn->server->pool);
    up_conn_discard_carried(conn);
}

void up_http2_tunnel_start(up_http2_tunnel_t *t)
{
    if (t->started)
        return;
    t->started = 1;
    up_conn_loop_start_carried(t->conn);
}

/* conn has something to act on: its input, room for its output, or its stream's end. At the
 * loop's next wake-up, never inside the session's callbacks. */
static void wake(up_http2_tunnel_t *t)
{
    if (!t->started)
        return;
    up_conn_loop_defer_update(t->conn);
    up_loop_wake(t->conn->server->loop);
}

void up_http2_tunnel_on_data(up_http2_tunnel_t *t, const uint8_t *data, size_t len)
{
    if (t->in_pos > 0) {
        /* What was read goes first, so the buffer stays within the window however long the
         * client keeps it from emptying. */
        up_buffer_consume(&t->in, t->in_pos);
        t->in_pos = 0;
    }
    up_buffer_append(&t->in, &t->conn->server->pool, data, len);
    wake(t);
}

void up_http2_tunnel_on_end(up_http2_tunnel_t *t)
{
    t->ended = 1;
    wake(t);
}

void up_http2_tunnel_on_taken(up_http2_tunnel_t *t)
{
    if (t->conn->_watcher.events & UP_EV_WRITE)
        wake(t);
}

void up_http2_tunnel_close(up_http2_tunnel_t *t)
{
    t->gone = 1;
    t->stream = NULL;
    if (t->started)
        up_conn_loop_close(t->conn);
    else
        up_http2_tunnel_on_gone(t);
}

void up_http2_tunnel_on_gone(up_http2_tunnel_t *t)
{
    t->gone = 1;
    t->stream = NULL;
    if (!t->started) {
        up_conn_t *conn = t->conn;
        conn->transport_data = NULL;
        tunnel_free(t, &conn->server->pool);
        up_conn_loop_drop_carried(conn);
        return;
    }
    wake(t);
}

#endif
