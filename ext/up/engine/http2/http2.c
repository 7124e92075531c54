/* HTTP/2 on libnghttp2; see http2.h for the contract and the threads. */

#include "http2/http2.h"
#include "http2/http2_tunnel.h"

#ifndef UP_HAVE_NGHTTP2

int up_http2_available(void)
{
    return 0;
}

up_conn_t *up_http2_lent_tunnel(up_exchange_t *ex, const up_protocol_t *protocol, void *data)
{
    (void)ex;
    (void)protocol;
    (void)data;
    return NULL;
}

#else

#include <nghttp2/nghttp2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "base/digits.h"
#include "base/memory.h"
#include "base/token.h"
#include "core/conn.h"
#include "core/context.h"
#include "core/exchange.h"
#include "http1/http1.h"
#include "http1/request.h"
#include "http1/response.h"
#include "transport/tls.h"

int up_http2_available(void)
{
    return 1;
}

/* ---------------------------------------------------------------- header lists */

/* A list's buffer a recycled stream keeps (recycle_stream): a typical request's fields. */
#define SPARE_FIELDS_BYTES 2048

typedef struct field_t {
    size_t name_off, name_len, value_off, value_len;
} field_t;

/* A list of header fields, their bytes in one growing buffer (nghttp2 lends a field only for
 * the length of its callback, and a response's fields come one call at a time). */
typedef struct fields_t {
    char *bytes;
    size_t len, cap;
    field_t *v;
    size_t n, cap_n;
} fields_t;

/* Makes room for extra more bytes in f's buffer (which may move). */
static void fields_reserve(fields_t *f, size_t extra)
{
    if (f->len + extra > f->cap) {
        size_t cap = f->cap == 0 ? 512 : f->cap;
        while (cap < f->len + extra)
            cap *= 2;
        f->bytes = up_realloc(f->bytes, cap);
        f->cap = cap;
    }
}

static void fields_add(fields_t *f, const char *name, size_t name_len, const char *value,
                       size_t value_len)
{
    fields_reserve(f, name_len + value_len);
    if (f->n == f->cap_n) {
        f->cap_n = f->cap_n == 0 ? 16 : f->cap_n * 2;
        f->v = up_realloc(f->v, f->cap_n * sizeof(*f->v));
    }
    field_t *e = &f->v[f->n++];
    e->name_off = f->len;
    e->name_len = name_len;
    memcpy(f->bytes + f->len, name, name_len);
    f->len += name_len;
    e->value_off = f->len;
    e->value_len = value_len;
    memcpy(f->bytes + f->len, value, value_len);
    f->len += value_len;
}

static void fields_free(fields_t *f)
{
    free(f->bytes);
    free(f->v);
    *f = (fields_t){0};
}

/* Empties f for its next use, keeping its memory unless a big list made it grow past
 * SPARE_FIELDS_BYTES, so a recycled stream holds no large header block. */
static void fields_empty(fields_t *f)
{
    if (f->cap > SPARE_FIELDS_BYTES)
        fields_free(f);
    f->len = f->n = 0;
}

static up_slice_t field_name(const fields_t *f, size_t i)
{
    return (up_slice_t){f->bytes + f->v[i].name_off, f->v[i].name_len};
}

static up_slice_t field_value(const fields_t *f, size_t i)
{
    return (up_slice_t){f->bytes + f->v[i].value_off, f->v[i].value_len};
}

/* ---------------------------------------------------------------- streams and sessions */

typedef struct session_t session_t;

/* One stream: its exchange, request and response. The loop thread owns it but for the fields
 * marked "under lock", which a borrower writes while the exchange is lent. It is freed when
 * nghttp2 is done with it, no borrower has it, and no list holds it (maybe_free). */
typedef struct stream_t {
    up_exchange_t ex;
    up_request_t req;
    up_response_state_t res;
    session_t *session;
    int32_t id;
    fields_t in;        /* the request's fields, pseudo-header fields included */
    size_t in_size;     /* RFC 9113 §6.5.2's measure of the list so far */
    up_http1_header_t *headers;
    size_t headers_cap;
    unsigned ng_open : 1;      /* nghttp2 knows the stream */
    unsigned lent : 1;         /* a borrower has the exchange */
    unsigned ready_listed : 1; /* complete, on session->ready */
    unsigned answered : 1;     /* the engine answered it (a limit): later input is dropped */
    unsigned rejected : 1;     /* 431: the head was over a limit */
    unsigned body_rejected : 1; /* 413 */
    unsigned counted : 1;       /* in session->arriving */
    unsigned extended_connect : 1; /* RFC 8441: a CONNECT with :protocol */
    /* Carries a WebSocket or an event stream once its head is out (http2_tunnel.h). */
    up_http2_tunnel_t *tunnel;
    up_buffer_t early; /* an extended CONNECT's DATA before its tunnel: the tunnel's first input */
    uint64_t held;             /* body bytes kept in memory: their windows stay closed */
    uint64_t last_in_ms;       /* when its head or its last body bytes came (body timeout) */
    /* under lock */
    fields_t out_fields;
    fields_t hints;            /* a 1xx head not submitted yet */
    int hints_status;
    /* Whole bytes, not bit-fields: the loop reads some of them without the lock while a
     * borrower writes others under it, which must not be one memory location. */
    unsigned char head_ready;  /* the final head is written, not submitted yet */
    unsigned char hints_ready;
    unsigned char body_done;   /* finish was called */
    unsigned char returned;    /* the borrower gave the exchange back */
    unsigned char news;        /* on session->news */
    unsigned char aborted;     /* rolled back after bytes were posted: reset the stream */
    unsigned char gone;        /* the client closed the stream, or the connection closed */
    unsigned char submitted;   /* its head went to nghttp2 (written by the loop, under lock) */
    unsigned char has_body;    /* the final head's: DATA may follow (not HEAD, 204, 304) */
    unsigned char tunnel_reset; /* the tunnel closed with the stream open: RST_STREAM */
    up_http2_tunnel_t *new_tunnel; /* made by the borrower, taken by the loop (stream_flush) */
    int status;                /* the final head's */
    up_outq_t out;             /* body bytes the app wrote, not yet framed */
    pthread_cond_t drained;    /* out was taken from, or the stream is gone */
    int waiters;               /* producers waiting on drained */
    struct stream_t *next_news;
    /* loop thread */
    struct stream_t *next_ready;
    struct stream_t *prev, *next; /* session->streams */
} stream_t;

struct session_t {
    nghttp2_session *ng;
    up_conn_t *conn;
    pthread_mutex_t lock;
    stream_t *news; /* under lock: streams with something from a borrower */
    int dead;       /* under lock: the connection closed; borrowers free their streams */
    /* loop thread */
    stream_t *ready_head, *ready_tail;
    stream_t *streams;
    stream_t *spare; /* freed streams kept for the next ones (recycle_stream), via next */
    unsigned spares;
    unsigned arriving; /* streams whose request may still be arriving (done_arriving) */
    stream_t *heading; /* the stream whose request head is being read (stream_by_id) */
    unsigned lent;
    uint64_t reset_window_start_ms;
    unsigned resets;
    int goaway;
    int window_settings; /* a SETTINGS changed the initial window since the last send */
    uint64_t held;       /* the streams' held bytes (UP_HTTP2_BODY_MEMORY) */
    int in_callbacks; /* inside nghttp2's recv or send: no nested call into the session */
};

static const up_exchange_ops_t stream_ops;

static session_t *session_of(up_conn_t *conn)
{
    return conn->protocol_data;
}

static stream_t *stream_of(up_exchange_t *ex)
{
    return ex->stream;
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A stream for id: a spare one when the session has one (its field lists keep their memory),
 * or a new one. */
static stream_t *stream_new(session_t *s, int32_t id)
{
    stream_t *st = s->spare;
    if (st != NULL) {
        s->spare = st->next;
        s->spares--;
        fields_t in = st->in, out_fields = st->out_fields;
        up_http1_header_t *headers = st->headers;
        size_t headers_cap = st->headers_cap;
        memset(st, 0, sizeof(*st));
        st->in = in;
        st->out_fields = out_fields;
        st->headers = headers;
        st->headers_cap = headers_cap;
    } else {
        st = up_calloc(1, sizeof(*st));
    }
    st->session = s;
    st->id = id;
    st->ng_open = 1;
    st->counted = 1;
    s->arriving++;
    st->last_in_ms = now_ms();
    st->ex.conn = s->conn;
    st->ex.req = &st->req;
    st->ex.res = &st->res;
    st->ex.stream = st;
    st->ex.ops = &stream_ops;
    up_request_body_init(&st->req.body);
    st->req.http2 = 1;
    st->req.head.minor_version = 1;
    st->req.head.content_length = -1;
    st->req.head.keep_alive = 1;
    st->res.content_length = -1;
    up_outq_init(&st->out);
    pthread_cond_init(&st->drained, NULL);
    st->next = s->streams;
    if (s->streams != NULL)
        s->streams->prev = st;
    s->streams = st;
    return st;
}

/* Lets go of what a stream nobody holds any more has but its field lists and header array. */
static void stream_clear(stream_t *st)
{
    up_buffer_pool_t *pool = &st->session->conn->server->pool;
    up_outq_clear(&st->out, pool);
    pthread_cond_destroy(&st->drained);
    up_request_body_reset(&st->req.body, pool);
    up_buffer_release(&st->early, pool);
    fields_free(&st->hints);
}

static void stream_free_cleared(stream_t *st)
{
    fields_free(&st->in);
    fields_free(&st->out_fields);
    free(st->headers);
    free(st);
}

/* Frees a stream nobody holds any more. */
static void stream_free(stream_t *st)
{
    stream_clear(st);
    stream_free_cleared(st);
}

/* Loop thread: a stream nobody holds any more becomes a spare for the session's next one, up
 * to as many as may be open at once (each stream in one turn's batch, and their field lists,
 * then cost no allocation); the spares go when the session has no stream (session_send). */
static void recycle_stream(session_t *s, stream_t *st)
{
    if (s->heading == st)
        s->heading = NULL;
    stream_clear(st);
    if (s->spares >= UP_HTTP2_MAX_CONCURRENT_STREAMS) {
        stream_free_cleared(st);
        return;
    }
    fields_empty(&st->in);
    fields_empty(&st->out_fields);
    st->next = s->spare;
    s->spare = st;
    s->spares++;
}

static void free_spares(session_t *s)
{
    while (s->spare != NULL) {
        stream_t *st = s->spare;
        s->spare = st->next;
        stream_free_cleared(st);
    }
    s->spares = 0;
}

/* st's request is whole, answered or closed: it arrives no more (any_arriving). */
static void done_arriving(session_t *s, stream_t *st)
{
    if (st->counted) {
        st->counted = 0;
        s->arriving--;
    }
}

static void unlink_stream(stream_t *st)
{
    session_t *s = st->session;
    if (st->prev != NULL)
        st->prev->next = st->next;
    else if (s->streams == st)
        s->streams = st->next;
    if (st->next != NULL)
        st->next->prev = st->prev;
    st->prev = st->next = NULL;
}

/* Reopens the connection's window for st's body bytes kept in memory: they are let go of, or in
 * a file now. */
static void release_held(session_t *s, stream_t *st)
{
    if (st->held == 0)
        return;
    s->held -= st->held;
    if (s->ng != NULL)
        nghttp2_session_consume_connection(s->ng, (size_t)st->held);
    st->held = 0;
}

/* Loop thread: frees st once nothing holds it. */
static void maybe_free(stream_t *st)
{
    if (st->ng_open || st->lent || st->ready_listed || st->news || st->tunnel != NULL)
        return;
    release_held(st->session, st);
    unlink_stream(st);
    recycle_stream(st->session, st);
}

/* ---------------------------------------------------------------- the writer (any thread) */

/* Tells the loop that st has news; the caller holds the lock. Returns whether the loop must be
 * told (it was not on the list yet). */
static int add_news_locked(session_t *s, stream_t *st)
{
    if (st->news || s->dead)
        return 0;
    st->news = 1;
    st->next_news = s->news;
    s->news = st;
    return 1;
}

/* Connection-specific fields (RFC 9113 §8.2.2) mean nothing on a stream: dropped. */
static int connection_specific(const char *name, size_t len)
{
    return UP_LOWER_EQ(name, len, "connection") || UP_LOWER_EQ(name, len, "keep-alive") ||
           UP_LOWER_EQ(name, len, "transfer-encoding") || UP_LOWER_EQ(name, len, "upgrade") ||
           UP_LOWER_EQ(name, len, "proxy-connection");
}

static up_response_error_t stream_start(up_exchange_t *ex, int status)
{
    stream_t *st = stream_of(ex);
    up_response_state_t *res = ex->res;
    /* After a final head only a rollback starts over: the loop may be reading its fields. */
    if ((res->started && !res->finished) || res->head_done)
        return UP_RESPONSE_E_STATE;
    if (status < 100 || status > 999)
        return UP_RESPONSE_E_BAD_STATUS;
    int head_only = res->head_only;
    *res = (up_response_state_t){0};
    res->head_only = head_only;
    res->content_length = -1;
    res->status = status;
    res->started = 1;
    res->no_body = status < 200 || status == 204 || status == 304;
    /* No lock: the loop reads the fields only once end_head published them under it, and no
     * start comes after that. */
    st->out_fields.len = st->out_fields.n = 0;
    return UP_RESPONSE_OK;
}

static up_response_error_t stream_add_header(up_exchange_t *ex, const char *name, size_t name_len,
                                             const char *value, size_t value_len)
{
    stream_t *st = stream_of(ex);
    up_response_state_t *res = ex->res;
    if (!res->started || res->head_done)
        return UP_RESPONSE_E_STATE;
    if (name_len == 0 || name[0] == ':')
        return UP_RESPONSE_E_BAD_HEADER_NAME;
    for (size_t i = 0; i < name_len; i++) {
        if (!up_is_tchar((unsigned char)name[i]))
            return UP_RESPONSE_E_BAD_HEADER_NAME;
    }
    for (size_t i = 0; i < value_len; i++) {
        if (value[i] == '\r' || value[i] == '\n' || value[i] == '\0')
            return UP_RESPONSE_E_BAD_HEADER_VALUE;
    }
    if (connection_specific(name, name_len))
        return UP_RESPONSE_OK;
    if (UP_LOWER_EQ(name, name_len, "content-length")) {
        if (res->no_body && res->status != 304)
            return UP_RESPONSE_OK;
        int64_t n = 0;
        if (value_len == 0 || value_len > 18)
            return UP_RESPONSE_E_BAD_CONTENT_LENGTH;
        for (size_t i = 0; i < value_len; i++) {
            if (value[i] < '0' || value[i] > '9')
                return UP_RESPONSE_E_BAD_CONTENT_LENGTH;
            n = n * 10 + (value[i] - '0');
        }
        if (res->content_length >= 0 && res->content_length != n)
            return UP_RESPONSE_E_BAD_CONTENT_LENGTH;
        if (res->content_length >= 0)
            return UP_RESPONSE_OK;
        res->content_length = n;
    }
    if (UP_LOWER_EQ(name, name_len, "date"))
        res->has_date = 1;
    /* RFC 9113 §8.2: field names are lower case on the wire. */
    char lower[256];
    char *low = name_len <= sizeof(lower) ? lower : up_malloc(name_len);
    for (size_t i = 0; i < name_len; i++)
        low[i] = (char)((name[i] >= 'A' && name[i] <= 'Z') ? name[i] + 32 : name[i]);
    /* No lock: the loop reads the fields only once end_head published them under it. */
    fields_add(&st->out_fields, low, name_len, value, value_len);
    if (low != lower)
        free(low);
    return UP_RESPONSE_OK;
}

static up_response_error_t stream_end_head(up_exchange_t *ex, int64_t body_length)
{
    stream_t *st = stream_of(ex);
    up_response_state_t *res = ex->res;
    session_t *s = st->session;
    if (!res->started || res->head_done)
        return UP_RESPONSE_E_STATE;
    if (res->status < 200) {
        /* An interim head (103): submitted before the final one; only the last one made
         * before the loop looks is sent. */
        pthread_mutex_lock(&s->lock);
        fields_t spare = st->hints; /* the lists trade places, so neither allocates again */
        spare.len = spare.n = 0;
        st->hints = st->out_fields;
        st->out_fields = spare;
        st->hints_status = res->status;
        st->hints_ready = 1;
        pthread_mutex_unlock(&s->lock);
        res->finished = 1;
        return UP_RESPONSE_OK;
    }
    if (res->content_length < 0 && body_length >= 0 && !res->no_body) {
        char digits[24], *end = digits + sizeof(digits);
        char *p = up_format_u64(end, (uint64_t)body_length, 10);
        res->content_length = body_length;
        fields_add(&st->out_fields, "content-length", 14, p, (size_t)(end - p));
    }
    if (!res->has_date) {
        char date[UP_DATE_LEN];
        up_date_copy(&ex->conn->server->date, date);
        fields_add(&st->out_fields, "date", 4, date, UP_DATE_LEN);
    }
    res->framing = res->content_length >= 0 ? UP_FRAMING_LENGTH : UP_FRAMING_NONE;
    res->body_left = res->content_length >= 0 ? (uint64_t)res->content_length : UINT64_MAX;
    res->head_done = 1;
    pthread_mutex_lock(&s->lock);
    st->head_ready = 1;
    st->status = res->status;
    st->has_body = !res->head_only && !res->no_body;
    pthread_mutex_unlock(&s->lock);
    return UP_RESPONSE_OK;
}

/* Checks a body part against the state and the declared length; returns what may be queued in
 * *len. */
static up_response_error_t body_part(up_exchange_t *ex, uint64_t *len)
{
    up_response_state_t *res = ex->res;
    if (!res->head_done || res->finished)
        return UP_RESPONSE_E_STATE;
    if (up_conn_any_broken(ex->conn))
        return UP_RESPONSE_E_CLIENT_GONE;
    if (res->head_only || res->no_body) {
        *len = 0;
        return UP_RESPONSE_OK;
    }
    if (*len > res->body_left)
        *len = res->body_left;
    res->body_left -= *len;
    res->body_bytes += *len;
    return UP_RESPONSE_OK;
}

/* Takes the session's lock and returns 1 when the stream can still be written to; 0, with the
 * lock let go, when the client or the session is gone. */
static int stream_lock_open(stream_t *st)
{
    pthread_mutex_lock(&st->session->lock);
    if (st->gone || st->session->dead) {
        pthread_mutex_unlock(&st->session->lock);
        return 0;
    }
    return 1;
}

static up_response_error_t stream_write(up_exchange_t *ex, const char *data, size_t len)
{
    uint64_t n = len;
    up_response_error_t err = body_part(ex, &n);
    if (err != UP_RESPONSE_OK || n == 0)
        return err;
    stream_t *st = stream_of(ex);
    if (!stream_lock_open(st))
        return UP_RESPONSE_E_CLIENT_GONE;
    up_outq_append(&st->out, &ex->conn->server->pool, data, (size_t)n);
    pthread_mutex_unlock(&st->session->lock);
    return UP_RESPONSE_OK;
}

static up_response_error_t stream_write_shared(up_exchange_t *ex, up_shared_t *shared,
                                               size_t offset, size_t len)
{
    uint64_t n = len;
    up_response_error_t err = body_part(ex, &n);
    if (err != UP_RESPONSE_OK || n == 0)
        return err;
    stream_t *st = stream_of(ex);
    if (!stream_lock_open(st))
        return UP_RESPONSE_E_CLIENT_GONE;
    up_outq_append_shared(&st->out, shared, offset, (size_t)n);
    pthread_mutex_unlock(&st->session->lock);
    return UP_RESPONSE_OK;
}

static up_response_error_t stream_sendfile_ref(up_exchange_t *ex, up_shared_t *owner, int fd,
                                               off_t offset, uint64_t len)
{
    uint64_t n = len;
    up_response_error_t err = body_part(ex, &n);
    if (err != UP_RESPONSE_OK || n == 0)
        return err;
    stream_t *st = stream_of(ex);
    if (!stream_lock_open(st))
        return UP_RESPONSE_E_CLIENT_GONE;
    up_outq_append_file_ref(&st->out, owner, fd, offset, n);
    pthread_mutex_unlock(&st->session->lock);
    return UP_RESPONSE_OK;
}

static up_response_error_t stream_sendfile(up_exchange_t *ex, int fd, off_t offset, uint64_t len)
{
    stream_t *st = stream_of(ex);
    uint64_t n = len;
    up_response_error_t err = body_part(ex, &n);
    if (err != UP_RESPONSE_OK || n == 0) {
        close(fd);
        return err;
    }
    if (!stream_lock_open(st)) {
        close(fd);
        return UP_RESPONSE_E_CLIENT_GONE;
    }
    up_outq_append_file(&st->out, fd, offset, n);
    pthread_mutex_unlock(&st->session->lock);
    return UP_RESPONSE_OK;
}

static up_response_error_t stream_finish(up_exchange_t *ex)
{
    stream_t *st = stream_of(ex);
    up_response_state_t *res = ex->res;
    if (!res->head_done || res->finished)
        return UP_RESPONSE_E_STATE;
    res->finished = 1;
    session_t *s = st->session;
    pthread_mutex_lock(&s->lock);
    /* A body shorter than its content-length: the client must not take it as whole. */
    if (res->framing == UP_FRAMING_LENGTH && res->body_left > 0 && !res->head_only &&
        !res->no_body)
        st->aborted = 1;
    st->body_done = 1;
    pthread_mutex_unlock(&s->lock);
    return UP_RESPONSE_OK;
}

static int stream_rollback(up_exchange_t *ex)
{
    stream_t *st = stream_of(ex);
    up_response_state_t *res = ex->res;
    session_t *s = st->session;
    if (!res->started)
        return 1;
    pthread_mutex_lock(&s->lock);
    /* Undoable until the loop has handed the head to nghttp2, as an HTTP/1.1 head is until it
     * is posted: an each that raises before its first part is still a 500. */
    int undoable = !st->submitted;
    if (undoable) {
        st->out_fields.len = st->out_fields.n = 0;
        st->head_ready = st->body_done = 0;
        up_outq_clear(&st->out, &ex->conn->server->pool);
    } else {
        st->aborted = 1;
        st->body_done = 1;
    }
    pthread_mutex_unlock(&s->lock);
    if (!undoable) {
        res->finished = 1;
        return 0;
    }
    res->started = res->head_done = res->finished = 0;
    return 1;
}

/* Hands what the stream has to the loop: returns 0 (the loop is told), -1 when the client is
 * gone. */
static int stream_post(up_exchange_t *ex)
{
    stream_t *st = stream_of(ex);
    session_t *s = st->session;
    pthread_mutex_lock(&s->lock);
    int tell = add_news_locked(s, st);
    int gone = st->gone || s->dead;
    pthread_mutex_unlock(&s->lock);
    if (tell)
        up_conn_any_notify(ex->conn);
    return gone ? -1 : 0;
}

/* Returns st to the loop; here: the caller runs the loop and takes its mail next, so the
 * notice costs no wake-up (one per stream, a write to the loop's eventfd, otherwise). */
static void give_back(up_exchange_t *ex, int here)
{
    stream_t *st = stream_of(ex);
    session_t *s = st->session;
    up_conn_t *conn = ex->conn;
    up_conn_retain(conn); /* the stream's reference may go on the loop before the notify */
    pthread_mutex_lock(&s->lock);
    st->returned = 1;
    int dead = s->dead;
    int tell = add_news_locked(s, st);
    pthread_mutex_unlock(&s->lock);
    if (dead) {
        /* The connection closed while the stream was lent: the loop let go of it. */
        stream_free(st);
        up_conn_release(conn);
    } else if (tell) {
        if (here)
            up_conn_loop_notify(conn);
        else
            up_conn_any_notify(conn);
    }
    up_conn_release(conn);
}

static void stream_give_back(up_exchange_t *ex)
{
    give_back(ex, 0);
}

static void stream_give_back_here(up_exchange_t *ex)
{
    give_back(ex, 1);
}

/* Back-pressure per stream: a producer waits for its own stream's body to be framed, which
 * its window decides, so a stream the client does not read holds no other stream's producer. */
static uint64_t stream_backlog(const up_exchange_t *ex)
{
    stream_t *st = ex->stream;
    session_t *s = st->session;
    pthread_mutex_lock(&s->lock);
    uint64_t n = st->gone || s->dead ? 0 : st->out.bytes;
    pthread_mutex_unlock(&s->lock);
    return n;
}

static int stream_wait_backlog(up_exchange_t *ex, uint64_t max_bytes, const atomic_int *cancel)
{
    stream_t *st = ex->stream;
    session_t *s = st->session;
    pthread_mutex_lock(&s->lock);
    st->waiters++;
    while (!st->gone && !s->dead && st->out.bytes > max_bytes && !atomic_load(cancel))
        pthread_cond_wait(&st->drained, &s->lock);
    st->waiters--;
    int gone = st->gone || s->dead;
    pthread_mutex_unlock(&s->lock);
    return gone ? -1 : 0;
}

static void stream_cancel_waits(up_exchange_t *ex)
{
    stream_t *st = ex->stream;
    session_t *s = st->session;
    pthread_mutex_lock(&s->lock);
    pthread_cond_broadcast(&st->drained);
    pthread_mutex_unlock(&s->lock);
}

static const up_exchange_ops_t stream_ops = {
    .start = stream_start,
    .add_header = stream_add_header,
    .end_head = stream_end_head,
    .write = stream_write,
    .write_shared = stream_write_shared,
    .sendfile_ref = stream_sendfile_ref,
    .sendfile = stream_sendfile,
    .finish = stream_finish,
    .rollback = stream_rollback,
    .post = stream_post,
    .give_back = stream_give_back,
    .give_back_here = stream_give_back_here,
    .backlog = stream_backlog,
    .wait_backlog = stream_wait_backlog,
    .cancel_waits = stream_cancel_waits,
};

/* ---------------------------------------------------------------- output (loop thread) */

static ssize_t data_source_read(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t length,
                                uint32_t *flags, nghttp2_data_source *source, void *user)
{
    (void)ng;
    (void)id;
    session_t *s = user;
    stream_t *st = source->ptr;
    up_conn_t *conn = s->conn;
    /* Once its return is taken (stream_flush), no borrower writes the stream: no lock. */
    int locked = st->lent;
    if (locked)
        pthread_mutex_lock(&s->lock);
    uint64_t avail = st->out.bytes + st->out.file_bytes;
    ssize_t r;
    if (avail == 0) {
        if (st->body_done) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
            r = 0;
        } else {
            r = NGHTTP2_ERR_DEFERRED; /* resumed when the app writes more (session_take_news) */
        }
    } else {
        int64_t n = up_outq_take(&st->out, &conn->server->pool, (char *)buf,
                                 avail < length ? (size_t)avail : length);
        if (st->waiters > 0)
            pthread_cond_broadcast(&st->drained); /* its producer may go on (stream_wait) */
        if (st->tunnel != NULL)
            up_http2_tunnel_on_taken(st->tunnel);
        if (n < 0) {
            r = NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* a file shrank: reset the stream */
        } else {
            r = (ssize_t)n;
            if (st->body_done && up_outq_empty(&st->out))
                *flags |= NGHTTP2_DATA_FLAG_EOF;
        }
    }
    int aborted = st->aborted && (*flags & NGHTTP2_DATA_FLAG_EOF);
    if (locked)
        pthread_mutex_unlock(&s->lock);
    /* A body cut short must not end the stream as if whole: nghttp2 resets it. */
    return aborted ? NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE : r;
}

/* A stream whose request is not whole yet (its head or body still coming). */
static int arriving(const stream_t *st)
{
    return st->ng_open && !st->ready_listed && !st->answered && !st->lent && !st->submitted &&
           st->ex.res->started == 0;
}

/* Whether a stream may be arriving: a count, so that the timer's choice and the stall check
 * cost no walk over the streams when none is (a stream stops counting once it is whole,
 * answered or closed, before arriving() turns false for it). */
static int any_arriving(const session_t *s)
{
    return s->arriving > 0;
}

/* Frames what nghttp2 has to send into the connection's output, while that output is under
 * UP_HTTP2_OUTPUT_BOUND (the rest when it drains: on_drained), then decides whether the
 * connection still wants input, and whether it is over. */
static void session_send(session_t *s)
{
    up_conn_t *conn = s->conn;
    if (up_conn_any_broken(conn) || s->in_callbacks)
        return;
    s->in_callbacks = 1;
    while (conn->_out.bytes + conn->_staged.bytes < UP_HTTP2_OUTPUT_BOUND) {
        const uint8_t *data;
        ssize_t n = nghttp2_session_mem_send(s->ng, &data);
        if (n < 0) {
            s->in_callbacks = 0;
            up_conn_loop_close(conn);
            return;
        }
        if (n == 0)
            break;
        up_outq_append(&conn->_staged, &conn->server->pool, data, (size_t)n);
    }
    s->in_callbacks = 0;
    up_conn_loop_commit(conn);
    int want_read = nghttp2_session_want_read(s->ng);
    up_conn_loop_want_read(conn, want_read);
    if (!want_read && !nghttp2_session_want_write(s->ng) && s->lent == 0)
        up_conn_loop_close_after_output(conn);
    /* A request still arriving runs HTTP/1's body timer (restarted by every event of the
     * connection); no stream at all, the keep-alive timer. */
    up_conn_loop_set_timer(conn, any_arriving(s)                      ? UP_HTTP1_TIMER_BODY
                                 : s->lent == 0 && s->streams == NULL ? UP_HTTP1_TIMER_KEEPALIVE
                                                                      : UP_TIMER_NONE);
}

/* nghttp2 copies what it is given: the list lives on the stack or in one allocation. */
static int submit_head(session_t *s, stream_t *st, int status, const fields_t *f,
                       const nghttp2_data_provider *body, int interim)
{
    nghttp2_nv stack[32];
    nghttp2_nv *nv = f->n + 1 <= 32 ? stack : up_malloc((f->n + 1) * sizeof(*nv));
    char digits[3] = {(char)('0' + status / 100 % 10), (char)('0' + status / 10 % 10),
                      (char)('0' + status % 10)};
    nv[0] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)digits, 7, 3, NGHTTP2_NV_FLAG_NONE};
    for (size_t i = 0; i < f->n; i++) {
        up_slice_t name = field_name(f, i), value = field_value(f, i);
        nv[i + 1] = (nghttp2_nv){(uint8_t *)name.base, (uint8_t *)value.base, name.len,
                                 value.len, NGHTTP2_NV_FLAG_NONE};
    }
    int r = interim ? nghttp2_submit_headers(s->ng, NGHTTP2_FLAG_NONE, st->id, NULL, nv,
                                             f->n + 1, NULL)
                    : nghttp2_submit_response(s->ng, st->id, nv, f->n + 1, body);
    if (nv != stack)
        free(nv);
    return r;
}

/* Submits what a stream's writer left: an interim head, the final head, more body, or a reset
 * for a response given up; and lets go of a returned exchange. The heads are submitted under
 * the lock, straight from the stream's lists (nghttp2 copies them and calls nothing of ours
 * meanwhile), so the lists keep their memory for the stream's next use. */
static void stream_flush(session_t *s, stream_t *st)
{
    pthread_mutex_lock(&s->lock);
    int hints_ready = st->hints_ready;
    st->hints_ready = 0;
    int submit = st->head_ready && !st->submitted;
    if (submit) {
        st->head_ready = 0;
        st->submitted = 1;
    }
    int returned = st->returned;
    int aborted = st->aborted;
    int body_now = st->body_done && up_outq_empty(&st->out);
    int tunnel_reset = st->tunnel_reset;
    st->tunnel_reset = 0;
    if (st->new_tunnel != NULL) {
        st->tunnel = st->new_tunnel;
        st->new_tunnel = NULL;
    }
    if (st->ng_open) {
        if (hints_ready && (submit || !st->submitted))
            submit_head(s, st, st->hints_status, &st->hints, NULL, 1);
        if (submit) {
            int has_body = st->has_body && !(body_now && !aborted);
            nghttp2_data_provider body = {.source.ptr = st, .read_callback = data_source_read};
            if (submit_head(s, st, st->status, &st->out_fields, has_body ? &body : NULL, 0) != 0)
                nghttp2_submit_rst_stream(s->ng, NGHTTP2_FLAG_NONE, st->id,
                                          NGHTTP2_INTERNAL_ERROR);
        } else if (st->submitted) {
            nghttp2_session_resume_data(s->ng, st->id);
        }
        if (returned && !st->submitted)
            nghttp2_submit_rst_stream(s->ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
        else if (aborted && !submit && st->submitted && body_now)
            nghttp2_session_resume_data(s->ng, st->id); /* the source resets it */
        if (tunnel_reset)
            nghttp2_submit_rst_stream(s->ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
    }
    if (hints_ready)
        st->hints.len = st->hints.n = 0;
    if (submit)
        fields_empty(&st->out_fields);
    pthread_mutex_unlock(&s->lock);
    /* The tunnel's connection writes to the stream (under the lock): after it is let go. */
    if (st->tunnel != NULL && st->early.len > 0) {
        up_http2_tunnel_on_data(st->tunnel, (const uint8_t *)st->early.base, st->early.len);
        up_buffer_release(&st->early, &s->conn->server->pool);
    }
    if (st->tunnel != NULL && !st->ng_open) {
        up_http2_tunnel_on_gone(st->tunnel); /* gone before its head went out */
        st->tunnel = NULL;
    } else if (st->tunnel != NULL && st->submitted) {
        up_http2_tunnel_start(st->tunnel);
    }
    if (returned && st->lent) {
        st->lent = 0;
        s->lent--;
        up_conn_release(s->conn); /* the borrower's (lend_stream) */
    }
}

/* Takes the borrowers' news and acts on it. */
static void session_take_news(session_t *s)
{
    pthread_mutex_lock(&s->lock);
    stream_t *list = s->news;
    s->news = NULL;
    for (stream_t *st = list; st != NULL; st = st->next_news)
        st->news = 0;
    pthread_mutex_unlock(&s->lock);
    while (list != NULL) {
        stream_t *st = list;
        list = st->next_news;
        stream_flush(s, st);
        maybe_free(st);
    }
}

/* ---------------------------------------------------------------- tunnels (http2_tunnel.h) */

up_conn_t *up_http2_lent_tunnel(up_exchange_t *ex, const up_protocol_t *protocol, void *data)
{
    if (ex->ops != &stream_ops)
        return NULL;
    stream_t *st = stream_of(ex);
    session_t *s = st->session;
    up_http2_tunnel_t *t = up_http2_tunnel_new(ex, st, protocol, data);
    up_conn_t *conn = up_http2_tunnel_conn(t);
    pthread_mutex_lock(&s->lock);
    int open = !st->gone && !s->dead;
    if (open)
        st->new_tunnel = t;
    pthread_mutex_unlock(&s->lock);
    if (!open) {
        up_http2_tunnel_discard(t);
        return NULL;
    }
    return conn;
}

ssize_t up_http2_stream_append(void *stream, const struct iovec *iov, int iovcnt, size_t max)
{
    stream_t *st = stream;
    session_t *s = st->session;
    up_buffer_pool_t *pool = &s->conn->server->pool;
    if (!stream_lock_open(st))
        return -1;
    size_t taken = 0;
    for (int i = 0; i < iovcnt && taken < max; i++) {
        size_t n = iov[i].iov_len < max - taken ? iov[i].iov_len : max - taken;
        up_outq_append(&st->out, pool, iov[i].iov_base, n);
        taken += n;
    }
    int tell = taken > 0 && add_news_locked(s, st);
    pthread_mutex_unlock(&s->lock);
    if (tell)
        up_conn_any_notify(s->conn);
    return (ssize_t)taken;
}

uint64_t up_http2_stream_unframed(void *stream)
{
    return stream_backlog(&((stream_t *)stream)->ex);
}

void up_http2_stream_consume(void *stream, size_t n)
{
    stream_t *st = stream;
    session_t *s = st->session;
    if (s->ng == NULL || !st->ng_open)
        return;
    nghttp2_session_consume_stream(s->ng, st->id, n);
    up_conn_any_notify(s->conn); /* its WINDOW_UPDATE goes with the session's next send */
}

/* Tells the loop's session what the tunnel asked of its stream. */
static void tunnel_news(stream_t *st, int reset)
{
    session_t *s = st->session;
    pthread_mutex_lock(&s->lock);
    if (reset) {
        st->tunnel_reset = 1;
        up_outq_clear(&st->out, &s->conn->server->pool);
    } else {
        st->body_done = 1;
    }
    int tell = add_news_locked(s, st);
    pthread_mutex_unlock(&s->lock);
    if (tell)
        up_conn_any_notify(s->conn);
}

void up_http2_stream_end(void *stream)
{
    tunnel_news(stream, 0);
}

void up_http2_stream_detach(void *stream)
{
    stream_t *st = stream;
    st->tunnel = NULL;
    tunnel_news(st, 1);
}

/* ---------------------------------------------------------------- input (loop thread) */

static void lend_stream(up_exchange_t *ex)
{
    stream_t *st = stream_of(ex);
    st->lent = 1;
    st->session->lent++;
    up_conn_retain(ex->conn); /* the borrower's: the stream may outlive the connection's close */
}

/* An answer of the engine's own (a limit), on the loop thread, before any app saw the stream. */
static void answer_now(session_t *s, stream_t *st, int status, const char *reason)
{
    done_arriving(s, st);
    st->answered = 1;
    up_response_send_simple(&st->ex, status, reason, 0);
    pthread_mutex_lock(&s->lock);
    add_news_locked(s, st);
    pthread_mutex_unlock(&s->lock);
}

/* A body that stopped coming for body_timeout: a 408 on its stream (RFC 9110 §15.5.9). Each
 * stream has its own clock, so one that stalls is answered while the others of the connection
 * go on sending. */
static void expire_stalled(session_t *s)
{
    if (!any_arriving(s))
        return;
    uint64_t timeout = s->conn->server->config.body_timeout_ms;
    uint64_t now = now_ms();
    for (stream_t *st = s->streams; st != NULL; st = st->next) {
        if (arriving(st) && now - st->last_in_ms >= timeout)
            answer_now(s, st, 408, "Request Timeout");
    }
}

static void set_slice(const fields_t *f, long i, up_slice_t *out)
{
    if (i >= 0)
        *out = field_value(f, (size_t)i);
}

/* Fills the request's head from the stream's fields, as HTTP/1's parser would have, every
 * slice in the one buffer of the fields (a binding may pass that buffer on whole: `up`'s). */
static void build_head(stream_t *st)
{
    up_http1_request_t *head = &st->req.head;
    fields_t *f = &st->in;
    long method = -1, path = -1, authority = -1, host = -1;
    for (size_t i = 0; i < f->n; i++) {
        up_slice_t name = field_name(f, i);
        if (UP_LOWER_EQ(name.base, name.len, ":method"))
            method = (long)i;
        else if (UP_LOWER_EQ(name.base, name.len, ":path"))
            path = (long)i;
        else if (UP_LOWER_EQ(name.base, name.len, ":authority"))
            authority = (long)i;
        else if (UP_LOWER_EQ(name.base, name.len, "host"))
            host = (long)i;
    }
    /* RFC 9113 §8.3.1: :authority stands for Host; the env's HTTP_HOST comes from it. */
    if (authority >= 0 && host < 0) {
        /* The value is copied from the buffer itself, once it has room (which may move it). */
        fields_reserve(f, 4 + f->v[authority].value_len);
        up_slice_t value = field_value(f, (size_t)authority);
        fields_add(f, "host", 4, value.base, value.len); /* slices are taken after */
    }
    if (st->headers_cap < f->n + 1) {
        free(st->headers);
        st->headers_cap = f->n + 1 > 16 ? f->n + 1 : 16;
        st->headers = up_malloc(st->headers_cap * sizeof(*st->headers));
    }
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++) {
        up_slice_t name = field_name(f, i);
        if (name.len == 0 || name.base[0] != ':')
            st->headers[n++] = (up_http1_header_t){name, field_value(f, i)};
    }
    set_slice(f, method, &head->method);
    set_slice(f, path, &head->target);
    set_slice(f, authority >= 0 ? authority : host, &head->host);
    head->headers = st->headers;
    head->num_headers = n;
    if (head->method.len == 7 && memcmp(head->method.base, "CONNECT", 7) == 0 &&
        !st->extended_connect) {
        head->target_form = UP_HTTP1_TARGET_AUTHORITY;
        head->target = head->host;
        head->path = head->host;
    } else if (head->target.len == 1 && head->target.base[0] == '*') {
        head->target_form = UP_HTTP1_TARGET_ASTERISK;
        head->path = head->target;
    } else {
        head->target_form = UP_HTTP1_TARGET_ORIGIN;
        const char *q = memchr(head->target.base, '?', head->target.len);
        head->path = head->target;
        if (q != NULL) {
            head->path.len = (size_t)(q - head->target.base);
            head->query = (up_slice_t){q + 1, head->target.len - head->path.len - 1};
        }
    }
    st->res.head_only = head->method.len == 4 && memcmp(head->method.base, "HEAD", 4) == 0;
    /* A body that no content-length announced (its DATA frames framed it) is told to the app
     * by the bindings as a chunked HTTP/1.1 body is: CONTENT_LENGTH is its length. */
    head->chunked = head->content_length < 0 && st->req.body.len > 0;
}

/* The field named name (lowercase, as HTTP/2 sends them), or an empty slice. */
static up_slice_t field_named(const fields_t *f, const char *name, size_t len)
{
    for (size_t i = 0; i < f->n; i++) {
        up_slice_t n = field_name(f, i);
        if (n.len == len && memcmp(n.base, name, len) == 0)
            return field_value(f, i);
    }
    return (up_slice_t){NULL, 0};
}

/* What the stream may become (rack.upgrade?), as HTTP/1 decides it: a WebSocket for RFC 8441's
 * extended CONNECT with :protocol websocket and version 13 (no key: §5), an event stream for a
 * GET that accepts text/event-stream (EventSource's request); other methods that accept it
 * stay requests whose response streams. */
static up_upgrade_kind_t upgrade_of(const stream_t *st)
{
    const up_http1_request_t *head = &st->req.head;
    if (st->extended_connect) {
        up_slice_t protocol = field_named(&st->in, ":protocol", 9);
        up_slice_t version = field_named(&st->in, "sec-websocket-version", 21);
        return UP_LOWER_EQ(protocol.base, protocol.len, "websocket") && version.len == 2 &&
                       memcmp(version.base, "13", 2) == 0
                   ? UP_UPGRADE_WEBSOCKET
                   : UP_UPGRADE_NONE;
    }
    return head->method.len == 3 && memcmp(head->method.base, "GET", 3) == 0 &&
                   up_http1_accepts_events(head)
               ? UP_UPGRADE_SSE
               : UP_UPGRADE_NONE;
}

/* Hands every complete stream to the handler chain, in the order they completed. */
static void session_dispatch(session_t *s)
{
    up_context_t *server = s->conn->server;
    while (s->ready_head != NULL) {
        stream_t *st = s->ready_head;
        s->ready_head = st->next_ready;
        if (s->ready_head == NULL)
            s->ready_tail = NULL;
        st->ready_listed = 0;
        if (!st->ng_open || st->answered || up_conn_any_broken(s->conn)) {
            maybe_free(st);
            continue;
        }
        build_head(st);
        st->req.upgrade = upgrade_of(st);
        up_handled_t h = up_server_loop_handle(server, &st->ex, lend_stream);
        if (h == UP_HANDLED_HERE) {
            pthread_mutex_lock(&s->lock);
            add_news_locked(s, st);
            pthread_mutex_unlock(&s->lock);
        } else if (h == UP_HANDLED_DONE) {
            pthread_mutex_lock(&s->lock);
            st->returned = 1;
            add_news_locked(s, st);
            pthread_mutex_unlock(&s->lock);
        }
        if (up_conn_any_broken(s->conn))
            return;
    }
}

/* The stream of id, or NULL: the one whose head is being read without a lookup, since
 * on_header asks once per field. */
static stream_t *stream_by_id(session_t *s, int32_t id)
{
    if (s->heading != NULL && s->heading->id == id)
        return s->heading;
    return nghttp2_session_get_stream_user_data(s->ng, id);
}

static int on_begin_headers(nghttp2_session *ng, const nghttp2_frame *frame, void *user)
{
    session_t *s = user;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    stream_t *st = stream_new(s, frame->hd.stream_id);
    nghttp2_session_set_stream_user_data(ng, frame->hd.stream_id, st);
    s->heading = st;
    return 0;
}

static int on_header(nghttp2_session *ng, const nghttp2_frame *frame, const uint8_t *name,
                     size_t name_len, const uint8_t *value, size_t value_len, uint8_t flags,
                     void *user)
{
    (void)ng;
    (void)flags;
    session_t *s = user;
    if (frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    stream_t *st = stream_by_id(s, frame->hd.stream_id);
    if (st == NULL || st->rejected)
        return 0;
    const up_server_config_t *cfg = &s->conn->server->config;
    /* RFC 9113 §6.5.2: a field counts its name, its value and 32. Past the limits the stream
     * gets a 431 once its head is in, and what else it sends is dropped unread. */
    st->in_size += name_len + value_len + 32;
    if (frame->headers.cat == NGHTTP2_HCAT_HEADERS)
        return 0; /* trailers: nothing of them reaches the app */
    if (st->in_size > cfg->max_head_size || st->in.n >= cfg->max_headers + 4) {
        st->rejected = 1;
        fields_free(&st->in);
        return 0;
    }
    if (name_len == 9 && memcmp(name, ":protocol", 9) == 0)
        st->extended_connect = 1;
    fields_add(&st->in, (const char *)name, name_len, (const char *)value, value_len);
    return 0;
}

static void mark_ready(session_t *s, stream_t *st)
{
    done_arriving(s, st);
    if (st->ready_listed || st->answered)
        return;
    st->ready_listed = 1;
    st->next_ready = NULL;
    if (s->ready_tail != NULL)
        s->ready_tail->next_ready = st;
    else
        s->ready_head = st;
    s->ready_tail = st;
}

static const char *head_too_large_reason = "Request Header Fields Too Large";
static const char *content_too_large_reason = "Content Too Large";

/* The request's content-length (nghttp2 checked its syntax and holds the body to it), or -1. */
static int64_t declared_length(const stream_t *st)
{
    for (size_t i = 0; i < st->in.n; i++) {
        up_slice_t name = field_name(&st->in, i);
        if (UP_LOWER_EQ(name.base, name.len, "content-length")) {
            up_slice_t v = field_value(&st->in, i);
            int64_t n = 0;
            for (size_t k = 0; k < v.len && k < 18; k++)
                n = n * 10 + (v.base[k] - '0');
            return n;
        }
    }
    return -1;
}

/* Whether the request holds its body back until a 100 (Continue) asks for it (RFC 9110
 * §10.1.1). */
static int expects_continue(const stream_t *st)
{
    for (size_t i = 0; i < st->in.n; i++) {
        up_slice_t name = field_name(&st->in, i);
        if (UP_LOWER_EQ(name.base, name.len, "expect")) {
            up_slice_t v = field_value(&st->in, i);
            return UP_LOWER_EQ(v.base, v.len, "100-continue");
        }
    }
    return 0;
}

/* Whether frame is a client's SETTINGS that changes SETTINGS_INITIAL_WINDOW_SIZE. */
static int changes_initial_window(const nghttp2_frame *frame)
{
    if (frame->hd.type != NGHTTP2_SETTINGS || (frame->hd.flags & NGHTTP2_FLAG_ACK))
        return 0;
    for (size_t i = 0; i < frame->settings.niv; i++) {
        if (frame->settings.iv[i].settings_id == NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE)
            return 1;
    }
    return 0;
}

/* RFC 9113 §6.9.2: a SETTINGS_INITIAL_WINDOW_SIZE that makes a stream's window overflow is a
 * connection error, where nghttp2 resets the stream (FLOW_CONTROL_ERROR): such a reset, queued
 * while the change was applied, becomes GOAWAY FLOW_CONTROL_ERROR instead. */
static int before_frame_send(nghttp2_session *ng, const nghttp2_frame *frame, void *user)
{
    session_t *s = user;
    if (frame->hd.type == NGHTTP2_RST_STREAM &&
        frame->rst_stream.error_code == NGHTTP2_FLOW_CONTROL_ERROR && s->window_settings) {
        nghttp2_session_terminate_session(ng, NGHTTP2_FLOW_CONTROL_ERROR);
        return NGHTTP2_ERR_CANCEL;
    }
    return 0;
}

/* A response that ended before its request (an engine's answer to a body over a limit or
 * stalled): RST_STREAM NO_ERROR tells the client to stop sending it (RFC 9113 §8.1). */
static int on_frame_send(nghttp2_session *ng, const nghttp2_frame *frame, void *user)
{
    session_t *s = user;
    /* A tunnel's stream (a WebSocket's close) waits for the client's END_STREAM instead. */
    if ((frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) &&
        (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
        nghttp2_session_get_stream_remote_close(ng, frame->hd.stream_id) == 0 &&
        (stream_by_id(s, frame->hd.stream_id) == NULL ||
         stream_by_id(s, frame->hd.stream_id)->tunnel == NULL))
        nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_NO_ERROR);
    return 0;
}

static int on_frame_recv(nghttp2_session *ng, const nghttp2_frame *frame, void *user)
{
    session_t *s = user;
    if (changes_initial_window(frame))
        s->window_settings = 1;
    if (frame->hd.type == NGHTTP2_RST_STREAM) {
        /* Rapid reset (CVE-2023-44487): resets counted per window. */
        uint64_t now = now_ms();
        if (now - s->reset_window_start_ms >= UP_HTTP2_RESET_WINDOW_MS) {
            s->reset_window_start_ms = now;
            s->resets = 0;
        }
        if (++s->resets > UP_HTTP2_MAX_RESETS) {
            nghttp2_session_terminate_session(ng, NGHTTP2_ENHANCE_YOUR_CALM);
            s->goaway = 1;
        }
        return 0;
    }
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
        return 0;
    stream_t *st = stream_by_id(s, frame->hd.stream_id);
    if (st == NULL)
        return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && st->rejected && !st->answered) {
        st->in = (fields_t){0};
        answer_now(s, st, 431, head_too_large_reason);
        return 0;
    }
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST &&
        !st->answered) {
        /* A body declared past max_body_size is refused before a byte of it is read. */
        uint64_t max = s->conn->server->config.max_body_size;
        int64_t declared = declared_length(st);
        if (max > 0 && declared > 0 && (uint64_t)declared > max) {
            answer_now(s, st, 413, content_too_large_reason);
            return 0;
        }
        if (!(frame->hd.flags & NGHTTP2_FLAG_END_STREAM) && expects_continue(st)) {
            fields_t none = {0};
            submit_head(s, st, 100, &none, NULL, 1);
        }
    }
    if (st->tunnel != NULL) {
        if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
            up_http2_tunnel_on_end(st->tunnel);
        return 0;
    }
    /* An extended CONNECT's stream stays open for what it will carry: its head is the whole
     * request (RFC 8441 §4). */
    if (st->extended_connect ? frame->hd.type == NGHTTP2_HEADERS &&
                                   frame->headers.cat == NGHTTP2_HCAT_REQUEST
                             : (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0)
        mark_ready(s, st);
    return 0;
}

/* Bytes dropped unread (a stream answered or gone): the connection's window reopens for them,
 * the stream's does not (its reset is on the way). */
static void drop_data(session_t *s, stream_t *st, size_t len)
{
    if (st != NULL) {
        release_held(s, st);
        up_request_body_reset(&st->req.body, &s->conn->server->pool);
    }
    nghttp2_session_consume_connection(s->ng, len);
}

/* A stream's body is kept in memory up to the spool threshold, its window
 * (UP_HTTP2_STREAM_WINDOW) and the connection's share (UP_HTTP2_BODY_MEMORY), its windows
 * closed on those bytes; past any of them it goes to a file, and the windows reopen as the
 * bytes are written there. */
static int on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
                         size_t len, void *user)
{
    (void)flags;
    session_t *s = user;
    stream_t *st = stream_by_id(s, id);
    if (st == NULL || st->answered) {
        drop_data(s, st, len);
        return 0;
    }
    if (st->tunnel != NULL || st->extended_connect) {
        /* The connection's window reopens now, the stream's as the tunnel reads: what comes
         * before the app took the upgrade waits for it (the stream's window bounds it). */
        nghttp2_session_consume_connection(ng, len);
        if (st->tunnel != NULL)
            up_http2_tunnel_on_data(st->tunnel, data, len);
        else
            up_buffer_append(&st->early, &s->conn->server->pool, data, len);
        return 0;
    }
    st->last_in_ms = now_ms();
    const up_server_config_t *cfg = &s->conn->server->config;
    up_request_body_t *body = &st->req.body;
    if (cfg->max_body_size > 0 && body->len + len > cfg->max_body_size) {
        drop_data(s, st, len);
        answer_now(s, st, 413, content_too_large_reason);
        return 0;
    }
    if (st->req.head.content_length < 0)
        st->req.head.content_length = declared_length(st);
    int64_t declared = st->req.head.content_length;
    uint64_t threshold = cfg->spool_threshold;
    if (st->held + len >= UP_HTTP2_STREAM_WINDOW || s->held + len > UP_HTTP2_BODY_MEMORY)
        threshold = 0;
    if (up_request_body_append(body, &s->conn->server->pool, (const char *)data, len,
                               declared > 0 ? (uint64_t)declared : 0, threshold,
                               cfg->tmp_dir) != 0) {
        drop_data(s, st, len);
        answer_now(s, st, 500, "Internal Server Error: the request body could not be stored");
        return 0;
    }
    if (body->fd >= 0) {
        size_t taken = (size_t)st->held + len;
        s->held -= st->held;
        st->held = 0;
        nghttp2_session_consume(ng, id, taken);
    } else {
        st->held += len;
        s->held += len;
    }
    return 0;
}

static int on_stream_close(nghttp2_session *ng, int32_t id, uint32_t error_code, void *user)
{
    (void)error_code;
    session_t *s = user;
    stream_t *st = stream_by_id(s, id);
    if (st == NULL)
        return 0;
    nghttp2_session_set_stream_user_data(ng, id, NULL);
    if (s->heading == st)
        s->heading = NULL; /* closed: nghttp2 has no such stream for stream_by_id any more */
    st->ng_open = 0;
    if (st->tunnel != NULL) {
        up_http2_tunnel_on_gone(st->tunnel);
        st->tunnel = NULL;
    }
    done_arriving(s, st);
    if (st->lent) {
        pthread_mutex_lock(&s->lock);
        st->gone = 1;
        pthread_cond_broadcast(&st->drained);
        pthread_mutex_unlock(&s->lock);
    } else {
        st->gone = 1; /* no borrower reads it any more (stream_flush took its return) */
    }
    maybe_free(st);
    return 0;
}

/* ---------------------------------------------------------------- the protocol */

static nghttp2_session_callbacks *shared_callbacks;
static nghttp2_option *shared_options;
static pthread_once_t shared_once = PTHREAD_ONCE_INIT;

static void make_shared(void)
{
    if (nghttp2_session_callbacks_new(&shared_callbacks) != 0 ||
        nghttp2_option_new(&shared_options) != 0)
        up_fatal("nghttp2: out of memory");
    nghttp2_session_callbacks *c = shared_callbacks;
    nghttp2_session_callbacks_set_on_begin_headers_callback(c, on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(c, on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(c, on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(c, on_data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(c, on_stream_close);
    nghttp2_session_callbacks_set_before_frame_send_callback(c, before_frame_send);
    nghttp2_session_callbacks_set_on_frame_send_callback(c, on_frame_send);
    nghttp2_option *o = shared_options;
    nghttp2_option_set_max_outbound_ack(o, UP_HTTP2_MAX_OUTBOUND_ACK);
    nghttp2_option_set_max_settings(o, UP_HTTP2_MAX_SETTINGS);
    nghttp2_option_set_max_continuations(o, UP_HTTP2_MAX_CONTINUATIONS);
    nghttp2_option_set_max_deflate_dynamic_table_size(o, UP_HTTP2_MAX_DEFLATE_TABLE);
    /* The windows reopen as bodies are taken (on_data_chunk, release_held), not as they come. */
    nghttp2_option_set_no_auto_window_update(o, 1);
    /* Ours (on_frame_recv) answers first with ENHANCE_YOUR_CALM; the library's stays above it
     * as a backstop. */
    nghttp2_option_set_stream_reset_rate_limit(o, 4 * UP_HTTP2_MAX_RESETS, UP_HTTP2_MAX_RESETS);
}

static session_t *session_new(up_conn_t *conn)
{
    pthread_once(&shared_once, make_shared);
    session_t *s = up_calloc(1, sizeof(*s));
    s->conn = conn;
    pthread_mutex_init(&s->lock, NULL);
    if (nghttp2_session_server_new2(&s->ng, shared_callbacks, s, shared_options) != 0)
        up_fatal("nghttp2: out of memory");
    const up_server_config_t *cfg = &conn->server->config;
    nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, UP_HTTP2_MAX_CONCURRENT_STREAMS},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, (uint32_t)cfg->max_head_size},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, UP_HTTP2_STREAM_WINDOW},
        /* RFC 8441: WebSockets on streams (extended CONNECT). */
        {NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1},
    };
    nghttp2_submit_settings(s->ng, NGHTTP2_FLAG_NONE, settings,
                            sizeof(settings) / sizeof(settings[0]));
    nghttp2_session_set_local_window_size(s->ng, NGHTTP2_FLAG_NONE, 0,
                                          UP_HTTP2_CONNECTION_WINDOW);
    return s;
}

static void http2_on_start(up_conn_t *conn)
{
    up_conn_loop_want_read(conn, 1);
}

static void http2_on_read(up_conn_t *conn)
{
    session_t *s = session_of(conn);
    up_buffer_t *b = &conn->_rbuf;
    if (conn->_rpos < b->len) {
        s->in_callbacks = 1;
        ssize_t n = nghttp2_session_mem_recv(s->ng, (const uint8_t *)b->base + conn->_rpos,
                                             b->len - conn->_rpos);
        s->in_callbacks = 0;
        if (n == NGHTTP2_ERR_FLOODED) {
            /* The client sends faster than it reads what its frames ask for: no GOAWAY would
             * reach it past the unread ACKs. */
            up_conn_loop_close(conn);
            return;
        }
        if (n < 0) {
            /* Fatal for the session (a header block continued past UP_HTTP2_MAX_CONTINUATIONS,
             * a bad preface): GOAWAY if the socket takes it, then close. */
            nghttp2_session_terminate_session(s->ng, n == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS
                                                         ? NGHTTP2_ENHANCE_YOUR_CALM
                                                         : NGHTTP2_PROTOCOL_ERROR);
            session_send(s);
            up_conn_loop_close_after_output(conn);
            return;
        }
        conn->_rpos = b->len;
        expire_stalled(s);
    }
    if (conn->eof) {
        /* An HTTP/2 client ends its side only when done with the connection (RFC 9113 has no
         * half-close of its own): streams under way lose their reader, and their producers
         * stop (the stream is gone). */
        up_conn_loop_close(conn);
        return;
    }
    session_dispatch(s);
    session_take_news(s);
    session_send(s);
    s->window_settings = 0;
}

static void http2_on_drained(up_conn_t *conn)
{
    session_send(session_of(conn));
}

static void http2_on_notify(up_conn_t *conn)
{
    session_t *s = session_of(conn);
    expire_stalled(s);
    session_take_news(s);
    session_send(s);
}

static void http2_on_resume(up_conn_t *conn)
{
    http2_on_notify(conn);
}

static void http2_on_timeout(up_conn_t *conn)
{
    session_t *s = session_of(conn);
    if (any_arriving(s)) {
        /* A body that stopped coming: a 408 on its stream, as HTTP/1 answers (RFC 9110
         * §15.5.9); the connection goes on. */
        for (stream_t *st = s->streams; st != NULL; st = st->next) {
            if (arriving(st))
                answer_now(s, st, 408, "Request Timeout");
        }
        session_take_news(s);
        session_send(s);
        return;
    }
    nghttp2_session_terminate_session(s->ng, NGHTTP2_NO_ERROR);
    session_send(s);
    up_conn_loop_close_after_output(conn);
}

/* A graceful stop: GOAWAY with the last stream taken (RFC 9113 §6.8), so the client retries the
 * others elsewhere; streams under way finish, then the session ends (session_send). */
static void http2_on_stop(up_conn_t *conn)
{
    session_t *s = session_of(conn);
    if (!s->goaway) {
        s->goaway = 1;
        nghttp2_submit_goaway(s->ng, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(s->ng), NGHTTP2_NO_ERROR,
                              NULL, 0);
    }
    session_send(s);
}

static void http2_on_close_request(up_conn_t *conn)
{
    http2_on_timeout(conn);
}

static void http2_on_close(up_conn_t *conn)
{
    session_t *s = session_of(conn);
    /* Under the lock, so that a borrower returning its stream now either came before (its
     * return is taken here) or sees dead and frees the stream itself (stream_give_back). */
    stream_t *drop = NULL;
    unsigned released = 0;
    size_t num_tunnels = 0;
    for (stream_t *st = s->streams; st != NULL; st = st->next)
        num_tunnels++;
    up_http2_tunnel_t **tunnels = up_calloc(num_tunnels + 1, sizeof(*tunnels));
    num_tunnels = 0;
    pthread_mutex_lock(&s->lock);
    s->dead = 1;
    for (stream_t *st = s->news; st != NULL; st = st->next_news)
        st->news = 0;
    s->news = NULL;
    while (s->streams != NULL) {
        stream_t *st = s->streams;
        unlink_stream(st);
        st->gone = 1;
        pthread_cond_broadcast(&st->drained);
        if (st->new_tunnel != NULL || st->tunnel != NULL)
            tunnels[num_tunnels++] = st->tunnel != NULL ? st->tunnel : st->new_tunnel;
        st->tunnel = st->new_tunnel = NULL;
        if (st->lent && st->returned) {
            st->lent = 0;
            released++;
        }
        if (!st->lent) {
            st->next_ready = drop;
            drop = st;
        }
    }
    pthread_mutex_unlock(&s->lock);
    /* Their carried connections close now (their on_close before the session's streams go). */
    for (size_t i = 0; i < num_tunnels; i++)
        up_http2_tunnel_close(tunnels[i]);
    free(tunnels);
    while (drop != NULL) {
        stream_t *st = drop;
        drop = st->next_ready;
        stream_free(st);
    }
    free_spares(s);
    s->arriving = 0;
    s->heading = NULL;
    s->lent = 0;
    s->ready_head = s->ready_tail = NULL;
    nghttp2_session_del(s->ng);
    s->ng = NULL;
    while (released-- > 0)
        up_conn_release(conn); /* the references of returns the loop never took */
}

static void http2_on_free(up_conn_t *conn)
{
    session_t *s = session_of(conn);
    if (s == NULL)
        return;
    pthread_mutex_destroy(&s->lock);
    free(s);
    conn->protocol_data = NULL;
}

const up_protocol_t up_http2_protocol = {
    .name = "h2",
    .on_read = http2_on_read,
    .on_start = http2_on_start,
    .on_drained = http2_on_drained,
    .on_resume = http2_on_resume,
    .on_timeout = http2_on_timeout,
    .on_stop = http2_on_stop,
    .on_close_request = http2_on_close_request,
    .on_notify = http2_on_notify,
    .on_close = http2_on_close,
    .on_free = http2_on_free,
};

/* ---------------------------------------------------------------- negotiation */

/* RFC 9113 §3.4. */
static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define PREFACE_LEN (sizeof(preface) - 1)

static const unsigned char alpn_h2_http11[] = "\x02h2\x08http/1.1";

/* The first bytes decide: HTTP/2 when ALPN chose h2 or they are the preface, else HTTP/1.1,
 * which has been started on the connection already (negotiate_on_start) and gets them all. */
static void negotiate_on_read(up_conn_t *conn)
{
    const char *p = conn->_rbuf.base + conn->_rpos;
    size_t len = conn->_rbuf.len - conn->_rpos;
    if (len == 0) {
        if (conn->eof)
            up_conn_loop_close(conn); /* gone before its first byte */
        return;
    }
    int h2;
    if (conn->transport == &up_transport_tls) {
        h2 = up_tls_conn_alpn_is(conn, "h2");
    } else {
        size_t n = len < PREFACE_LEN ? len : PREFACE_LEN;
        if (memcmp(p, preface, n) == 0 && n < PREFACE_LEN && !conn->eof)
            return; /* so far the preface: wait for the rest */
        h2 = n == PREFACE_LEN && memcmp(p, preface, n) == 0;
    }
    if (h2)
        up_conn_loop_switch_protocol(conn, &up_http2_protocol, session_new(conn));
    else
        up_conn_loop_switch_protocol(conn, &up_http1_protocol, NULL);
}

/* Before the first byte nothing is under way: nothing to resume, and a timeout or a stop
 * closes. */
static void negotiate_nothing(up_conn_t *conn)
{
    (void)conn;
}

static void negotiate_close(up_conn_t *conn)
{
    up_conn_loop_close(conn);
}

const up_protocol_t up_http2_negotiate_protocol = {
    .name = "h2,http/1.1",
    .conn_state_size = sizeof(up_http1_t),
    .alpn = alpn_h2_http11,
    .alpn_len = sizeof(alpn_h2_http11) - 1,
    .on_read = negotiate_on_read,
    .on_start = up_http1_start,
    .on_drained = negotiate_nothing,
    .on_resume = negotiate_nothing,
    .on_timeout = negotiate_close,
    .on_stop = negotiate_close,
    .on_close_request = negotiate_close,
    .on_notify = negotiate_nothing,
    .on_close = negotiate_nothing,
};

#endif
