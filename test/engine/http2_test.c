/* HTTP/2 (engine/http2/http2.c, http2_tunnel.c) driven by an nghttp2 client session over the
 * harness's socketpairs, under ASan/UBSan and TSan: the negotiation (the preface, or HTTP/1.1),
 * a stream answered on the loop thread, streams lent to other threads and answered there at
 * once, a request body, an event stream and a WebSocket (RFC 8441) carried on their streams,
 * written from another thread, and the lifecycle edges where memory goes wrong: a stream the
 * client resets while its exchange is lent or while it carries a WebSocket, and a connection
 * closed while one is lent or carries one. */

#include <nghttp2/nghttp2.h>
#include <pthread.h>
#include "engine_harness.h"
#include "http2/http2.h"
#include "sse/sse.h"
#include "test.h"
#include "websocket/websocket.h"

#define MAX_STREAMS 16

typedef struct h2_stream_t {
    int status;
    char body[256 * 1024];
    size_t len;
    int closed;
    uint32_t error;
} h2_stream_t;

typedef struct h2_client_t {
    harness_t *h;
    client_t c;
    nghttp2_session *ng;
    h2_stream_t s[MAX_STREAMS];
    uint32_t goaway_error;
    int goaway;
} h2_client_t;

static h2_stream_t *slot(h2_client_t *x, int32_t id)
{
    int i = (id - 1) / 2;
    return i >= 0 && i < MAX_STREAMS ? &x->s[i] : NULL;
}

static ssize_t client_on_send(nghttp2_session *ng, const uint8_t *data, size_t len, int flags,
                              void *user)
{
    (void)ng;
    (void)flags;
    h2_client_t *x = user;
    return client_send(x->h, &x->c, data, len) == 0 ? (ssize_t)len : NGHTTP2_ERR_CALLBACK_FAILURE;
}

static int client_on_header(nghttp2_session *ng, const nghttp2_frame *frame, const uint8_t *name,
                            size_t name_len, const uint8_t *value, size_t value_len,
                            uint8_t flags, void *user)
{
    (void)ng;
    (void)flags;
    h2_stream_t *s = slot(user, frame->hd.stream_id);
    if (s != NULL && name_len == 7 && memcmp(name, ":status", 7) == 0 && value_len == 3)
        s->status = atoi((const char *)value);
    return 0;
}

static int client_on_data(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data,
                          size_t len, void *user)
{
    (void)ng;
    (void)flags;
    h2_stream_t *s = slot(user, id);
    if (s != NULL && s->len + len <= sizeof(s->body)) {
        memcpy(s->body + s->len, data, len);
        s->len += len;
    }
    return 0;
}

static int client_on_close(nghttp2_session *ng, int32_t id, uint32_t error, void *user)
{
    (void)ng;
    h2_stream_t *s = slot(user, id);
    if (s != NULL) {
        s->closed = 1;
        s->error = error;
    }
    return 0;
}

static int client_on_frame(nghttp2_session *ng, const nghttp2_frame *frame, void *user)
{
    (void)ng;
    h2_client_t *x = user;
    if (frame->hd.type == NGHTTP2_GOAWAY) {
        x->goaway = 1;
        x->goaway_error = frame->goaway.error_code;
    }
    return 0;
}

static void h2_open(harness_t *h, h2_client_t *x)
{
    memset(x, 0, sizeof(*x));
    x->h = h;
    client_open_with(h, &x->c, NULL, 0, &up_http2_negotiate_protocol);
    nghttp2_session_callbacks *cbs;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_send_callback(cbs, client_on_send);
    nghttp2_session_callbacks_set_on_header_callback(cbs, client_on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, client_on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, client_on_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, client_on_frame);
    nghttp2_session_client_new(&x->ng, cbs, x);
    nghttp2_session_callbacks_del(cbs);
    nghttp2_submit_settings(x->ng, NGHTTP2_FLAG_NONE, NULL, 0);
    nghttp2_session_send(x->ng);
}

static void h2_close(h2_client_t *x)
{
    nghttp2_session_del(x->ng);
    client_close(&x->c);
}

/* Reads what came into the client session, turns the loop once, sends what the session has. */
static void h2_pump(h2_client_t *x)
{
    client_pump(x->h, &x->c, 1 << 20);
    if (x->c.len > x->c.pos) {
        nghttp2_session_mem_recv(x->ng, (const uint8_t *)x->c.in + x->c.pos, x->c.len - x->c.pos);
        x->c.pos = x->c.len;
    }
    nghttp2_session_send(x->ng);
}

static int h2_wait(h2_client_t *x, int (*done)(h2_client_t *x, void *arg), void *arg)
{
    uint64_t deadline = harness_now_ms() + HARNESS_TIMEOUT_MS;
    while (!done(x, arg)) {
        if (harness_now_ms() > deadline)
            return 0;
        h2_pump(x);
    }
    return 1;
}

static int stream_closed(h2_client_t *x, void *arg)
{
    return slot(x, (int32_t)(intptr_t)arg)->closed;
}

/* A request, with an accept field unless accept is NULL. */
static int32_t h2_request_accepting(h2_client_t *x, const char *method, const char *path,
                                    const nghttp2_data_provider *body, const char *accept)
{
    nghttp2_nv nv[] = {
        {(uint8_t *)":method", (uint8_t *)method, 7, strlen(method), NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":path", (uint8_t *)path, 5, strlen(path), NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":authority", (uint8_t *)"example.com", 10, 11, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"accept", (uint8_t *)accept, 6, accept ? strlen(accept) : 0,
         NGHTTP2_NV_FLAG_NONE},
    };
    int32_t id = nghttp2_submit_request(x->ng, NULL, nv, accept ? 5 : 4, body, NULL);
    nghttp2_session_send(x->ng);
    return id;
}

static int32_t h2_request(h2_client_t *x, const char *method, const char *path,
                          const nghttp2_data_provider *body)
{
    return h2_request_accepting(x, method, path, body, NULL);
}

/* ---------------------------------------------------------------- the server's app */

static up_exchange_t *deferred[MAX_STREAMS];
static int num_deferred;
static int num_requests; /* the app calls */

/* The long-lived streams: an event stream's first event and close, a WebSocket's echo. */
static up_conn_t *carried;   /* the last one taken, with the test's reference */
static int carried_closes;   /* on_close calls */
static unsigned carried_code; /* the last on_close's code */

static void carried_on_open(up_conn_t *conn, void *user)
{
    if (user == NULL) {
        up_sse_any_send(conn, NULL, 0, NULL, 0, "one", 3);
        up_sse_any_close(conn);
    }
}

static void carried_on_message(up_conn_t *conn, void *user, up_upgrade_message_t *msg)
{
    (void)user;
    up_ws_any_send(conn, UP_WS_OP_TEXT, msg->data, msg->len);
    up_ws_any_consumed(conn, msg->len);
    free(msg);
}

static void carried_on_close(up_conn_t *conn, void *user, unsigned code)
{
    (void)conn;
    (void)user;
    carried_closes++;
    carried_code = code;
}

static const up_upgrade_events_t carried_events = {carried_on_open, carried_on_message, NULL,
                                                   NULL, carried_on_close};
static int ws_user;

/* Takes the upgrade the request asks for; 1 when it did. */
static int take_upgrade(up_exchange_t *ex)
{
    up_conn_t *conn = NULL;
    if (ex->req->upgrade == UP_UPGRADE_WEBSOCKET) {
        up_ws_settings_t settings = {1 << 20, 0, NULL};
        up_ws_t *ws = up_ws_lent_start_accept(ex, &settings);
        CHECK(ws != NULL, "a WebSocket");
        conn = up_ws_lent_accept(ex, ws, &carried_events, &ws_user);
    } else if (ex->req->upgrade == UP_UPGRADE_SSE) {
        CHECK(up_sse_lent_start_accept(ex) == 0, "an event stream");
        conn = up_sse_lent_accept(ex, 0, &carried_events, NULL);
    } else {
        return 0;
    }
    CHECK(conn != NULL && conn != ex->conn, "a connection of the stream's own");
    if (carried != NULL)
        up_conn_release(carried);
    carried = conn;
    return 1;
}

static void answer(up_exchange_t *ex, const char *text)
{
    up_response_start(ex, 200);
    up_response_add_header(ex, "Content-Type", 12, "text/plain", 10);
    up_response_end_head(ex, -1);
    up_response_write(ex, text, strlen(text));
    up_response_finish(ex);
}

static up_request_result_t on_request(up_exchange_t *ex, void *user)
{
    (void)user;
    num_requests++;
    if (take_upgrade(ex))
        return UP_REQUEST_DONE;
    const up_http1_request_t *head = &ex->req->head;
    if (head->path.len == 6 && memcmp(head->path.base, "/defer", 6) == 0 &&
        num_deferred < MAX_STREAMS) {
        deferred[num_deferred++] = ex;
        return UP_REQUEST_DEFERRED;
    }
    if (head->path.len == 5 && memcmp(head->path.base, "/echo", 5) == 0) {
        char text[64];
        snprintf(text, sizeof(text), "%llu %s", (unsigned long long)ex->req->body.len,
                 ex->req->http2 ? "h2" : "h1");
        answer(ex, text);
        return UP_REQUEST_DONE;
    }
    if (head->path.len == 6 && memcmp(head->path.base, "/where", 6) == 0) {
        answer(ex, ex->req->body.fd >= 0 ? "file" : "memory");
        return UP_REQUEST_DONE;
    }
    answer(ex, ex->req->http2 ? "sync h2" : "sync h1");
    return UP_REQUEST_DONE;
}

/* Another thread answers a lent stream, as an app thread does, and gives it back. */
static void *answer_on_thread(void *arg)
{
    up_exchange_t *ex = arg;
    up_response_start(ex, 200);
    up_response_end_head(ex, -1);
    char part[4096];
    memset(part, 'p', sizeof(part));
    for (int i = 0; i < 16; i++) {
        if (up_response_write(ex, part, sizeof(part)) != UP_RESPONSE_OK)
            break;
        up_response_send(ex);
    }
    up_response_finish(ex);
    up_exchange_return(ex);
    return NULL;
}

static void start(harness_t *h)
{
    up_server_handler_t handler = {.on_request = on_request};
    harness_start(h, NULL, &handler);
    num_deferred = 0;
    num_requests = 0;
    carried = NULL;
    carried_closes = 0;
    carried_code = 0;
}

/* The server's end of the test: the reference a test took goes first. */
static void stop(harness_t *h)
{
    if (carried != NULL)
        up_conn_release(carried);
    carried = NULL;
    harness_stop(h);
}

static int deferred_count(h2_client_t *x, void *arg)
{
    (void)x;
    return num_deferred >= (int)(intptr_t)arg;
}

/* ---------------------------------------------------------------- tests */

static void test_negotiation(void)
{
    harness_t h;
    start(&h);
    client_t c;
    client_open_with(&h, &c, "GET /x HTTP/1.1\r\nHost: a\r\n\r\n", 0, &up_http2_negotiate_protocol);
    response_t res;
    CHECK(client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS), "an HTTP/1.1 answer");
    CHECK(strcmp(res.body, "sync h1") == 0, "body %s", res.body);
    response_free(&res);
    client_close(&c);

    h2_client_t x;
    h2_open(&h, &x);
    int32_t id = h2_request(&x, "GET", "/sync", NULL);
    CHECK(h2_wait(&x, stream_closed, (void *)(intptr_t)id), "the stream closed");
    h2_stream_t *s = slot(&x, id);
    CHECK(s->status == 200 && s->len == 7 && memcmp(s->body, "sync h2", 7) == 0,
          "status %d, %zu bytes", s->status, s->len);
    h2_close(&x);
    harness_stop(&h);
}

static ssize_t body_read(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len,
                         uint32_t *flags, nghttp2_data_source *source, void *user)
{
    (void)ng;
    (void)id;
    (void)user;
    size_t *left = source->ptr;
    size_t n = *left < len ? *left : len;
    memset(buf, 'b', n);
    *left -= n;
    if (*left == 0)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

static void test_request_body(void)
{
    harness_t h;
    start(&h);
    h2_client_t x;
    h2_open(&h, &x);
    size_t left = 200000;
    nghttp2_data_provider body = {.source.ptr = &left, .read_callback = body_read};
    int32_t id = h2_request(&x, "POST", "/echo", &body);
    CHECK(h2_wait(&x, stream_closed, (void *)(intptr_t)id), "the stream closed");
    h2_stream_t *s = slot(&x, id);
    CHECK(s->len == 9 && memcmp(s->body, "200000 h2", 9) == 0, "%.*s", (int)s->len, s->body);
    h2_close(&x);
    harness_stop(&h);
}

/* A body the client sends in part, then holds (DEFERRED) until told to end it. */
typedef struct part_body_t {
    size_t left;
    int end;
} part_body_t;

static ssize_t part_read(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len,
                         uint32_t *flags, nghttp2_data_source *source, void *user)
{
    (void)ng;
    (void)id;
    (void)user;
    part_body_t *b = source->ptr;
    size_t n = b->left < len ? b->left : len;
    memset(buf, 'q', n);
    b->left -= n;
    if (b->left == 0 && b->end)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    else if (n == 0)
        return NGHTTP2_ERR_DEFERRED;
    return (ssize_t)n;
}

/* Uploads at once past the stream window and the connection's share of memory for bodies:
 * kept in memory, then spooled, the windows reopening as they go; each arrives whole. */
static void test_uploads_past_the_windows(void)
{
    harness_t h;
    start(&h);
    h2_client_t x;
    h2_open(&h, &x);
    size_t left[4] = {700000, 700000, 300000, 100000};
    nghttp2_data_provider body[4];
    int32_t id[4];
    for (int i = 0; i < 4; i++) {
        body[i] = (nghttp2_data_provider){.source.ptr = &left[i], .read_callback = body_read};
        id[i] = h2_request(&x, "POST", "/echo", &body[i]);
    }
    const char *want[4] = {"700000 h2", "700000 h2", "300000 h2", "100000 h2"};
    for (int i = 0; i < 4; i++) {
        CHECK(h2_wait(&x, stream_closed, (void *)(intptr_t)id[i]), "stream %d closed", i);
        h2_stream_t *s = slot(&x, id[i]);
        CHECK(s->len == strlen(want[i]) && memcmp(s->body, want[i], s->len) == 0, "%.*s",
              (int)s->len, s->body);
    }
    h2_close(&x);
    harness_stop(&h);
}

/* Streams reset in the middle of their bodies, some kept in memory, some spooled: their bytes
 * are let go of, the connection's window reopens for them (an upload after them larger than
 * the whole window arrives), and its share of memory for bodies is whole again (a small body
 * after them is kept in memory). */
static void test_uploads_reset_midway(void)
{
    harness_t h;
    start(&h);
    h2_client_t x;
    h2_open(&h, &x);
    for (int i = 0; i < 6; i++) {
        part_body_t part = {.left = i % 2 == 0 ? 250000 : 400000, .end = 0};
        nghttp2_data_provider p = {.source.ptr = &part, .read_callback = part_read};
        int32_t id = h2_request(&x, "POST", "/echo", &p);
        for (int k = 0; k < 200 && part.left > 0; k++)
            h2_pump(&x);
        CHECK(part.left == 0, "stream %d sent its part", i);
        nghttp2_submit_rst_stream(x.ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
        nghttp2_session_send(x.ng);
        for (int k = 0; k < 5; k++)
            h2_pump(&x);
    }
    size_t left = 1500000;
    nghttp2_data_provider p = {.source.ptr = &left, .read_callback = body_read};
    int32_t id = h2_request(&x, "POST", "/echo", &p);
    CHECK(h2_wait(&x, stream_closed, (void *)(intptr_t)id), "the last upload closed");
    h2_stream_t *s = slot(&x, id);
    CHECK(s->len == 10 && memcmp(s->body, "1500000 h2", 10) == 0, "%.*s", (int)s->len, s->body);
    left = 50000;
    id = h2_request(&x, "POST", "/where", &p);
    CHECK(h2_wait(&x, stream_closed, (void *)(intptr_t)id), "the small upload closed");
    s = slot(&x, id);
    CHECK(s->len == 6 && memcmp(s->body, "memory", 6) == 0, "%.*s", (int)s->len, s->body);
    h2_close(&x);
    harness_stop(&h);
}

static void test_streams_answered_on_threads(void)
{
    harness_t h;
    start(&h);
    h2_client_t x;
    h2_open(&h, &x);
    int32_t a = h2_request(&x, "GET", "/defer", NULL);
    int32_t b = h2_request(&x, "GET", "/defer", NULL);
    CHECK(h2_wait(&x, deferred_count, (void *)2), "both streams lent");
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, answer_on_thread, deferred[i]);
    CHECK(h2_wait(&x, stream_closed, (void *)(intptr_t)a), "a closed");
    CHECK(h2_wait(&x, stream_closed, (void *)(intptr_t)b), "b closed");
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK(slot(&x, a)->len == 16 * 4096 && slot(&x, b)->len == 16 * 4096, "%zu and %zu bytes",
          slot(&x, a)->len, slot(&x, b)->len);
    CHECK(slot(&x, a)->error == 0 && slot(&x, b)->error == 0, "ended cleanly");
    h2_close(&x);
    harness_stop(&h);
}

/* The client resets a stream whose exchange is lent: the borrower's writes see it gone, and
 * the stream is freed once it is given back. */
static void test_reset_while_lent(void)
{
    harness_t h;
    start(&h);
    h2_client_t x;
    h2_open(&h, &x);
    int32_t id = h2_request(&x, "GET", "/defer", NULL);
    CHECK(h2_wait(&x, deferred_count, (void *)1), "lent");
    nghttp2_submit_rst_stream(x.ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
    nghttp2_session_send(x.ng);
    for (int i = 0; i < 20; i++)
        h2_pump(&x);
    pthread_t t;
    pthread_create(&t, NULL, answer_on_thread, deferred[0]);
    pthread_join(t, NULL);
    int32_t next = h2_request(&x, "GET", "/sync", NULL);
    CHECK(h2_wait(&x, stream_closed, (void *)(intptr_t)next), "the connection goes on");
    CHECK(slot(&x, next)->status == 200, "status %d", slot(&x, next)->status);
    h2_close(&x);
    harness_stop(&h);
}

/* The connection closes while a stream is lent: the borrower frees the stream when it gives it
 * back, after the session is gone. */
static void test_close_while_lent(void)
{
    harness_t h;
    start(&h);
    h2_client_t x;
    h2_open(&h, &x);
    h2_request(&x, "GET", "/defer", NULL);
    CHECK(h2_wait(&x, deferred_count, (void *)1), "lent");
    client_hang_up(&x.c);
    for (int i = 0; i < 20; i++)
        harness_turn(&h, 1);
    pthread_t t;
    pthread_create(&t, NULL, answer_on_thread, deferred[0]);
    pthread_join(t, NULL);
    for (int i = 0; i < 20; i++)
        harness_turn(&h, 1);
    nghttp2_session_del(x.ng);
    client_close(&x.c);
    harness_stop(&h);
}

/* An event stream's GET stays on its stream: its events, then END_STREAM when the app closes
 * it; the other streams go on, and a POST that accepts events is a request like any. */
static void test_event_stream_on_its_stream(void)
{
    harness_t h;
    start(&h);
    h2_client_t x;
    h2_open(&h, &x);
    int32_t events = h2_request_accepting(&x, "GET", "/feed", NULL, "text/event-stream");
    int32_t plain = h2_request(&x, "GET", "/sync", NULL);
    size_t left = 3;
    nghttp2_data_provider body = {.source.ptr = &left, .read_callback = body_read};
    int32_t post = h2_request_accepting(&x, "POST", "/echo", &body, "text/event-stream");
    CHECK(h2_wait(&x, stream_closed, (void *)(intptr_t)events), "the event stream closed");
    CHECK(h2_wait(&x, stream_closed, (void *)(intptr_t)plain), "the other stream closed");
    CHECK(h2_wait(&x, stream_closed, (void *)(intptr_t)post), "the POST closed");
    h2_stream_t *s = slot(&x, events);
    CHECK(s->status == 200 && s->error == 0 && s->len == 11 && memcmp(s->body, "data: one\n\n", 11) == 0,
          "status %d, error %u, %.*s", s->status, s->error, (int)s->len, s->body);
    CHECK(slot(&x, plain)->status == 200 && slot(&x, plain)->error == 0, "status %d",
          slot(&x, plain)->status);
    CHECK(slot(&x, post)->len == 4 && memcmp(slot(&x, post)->body, "3 h2", 4) == 0, "%.*s",
          (int)slot(&x, post)->len, slot(&x, post)->body);
    CHECK(num_requests == 3, "the app saw %d requests", num_requests);
    for (int i = 0; i < 20 && carried_closes == 0; i++)
        h2_pump(&x);
    CHECK(carried_closes == 1 && carried_code == 0, "on_close %d, code %u", carried_closes,
          carried_code);
    CHECK(!x.goaway, "no GOAWAY");
    h2_close(&x);
    stop(&h);
}

/* ---- WebSockets (RFC 8441) */

/* What the client sends on its WebSocket's stream: masked frames appended, DEFERRED when none
 * is waiting (the stream stays open). */
typedef struct ws_out_t {
    uint8_t bytes[256];
    size_t len, pos;
} ws_out_t;

static ssize_t ws_out_read(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len,
                           uint32_t *flags, nghttp2_data_source *source, void *user)
{
    (void)ng;
    (void)id;
    (void)flags;
    (void)user;
    ws_out_t *o = source->ptr;
    size_t n = o->len - o->pos < len ? o->len - o->pos : len;
    if (n == 0)
        return NGHTTP2_ERR_DEFERRED;
    memcpy(buf, o->bytes + o->pos, n);
    o->pos += n;
    return (ssize_t)n;
}

/* A masked text frame (RFC 6455 §5.3; a key of zeros is a key). */
static void ws_out_text(h2_client_t *x, int32_t id, ws_out_t *o, const char *text)
{
    size_t n = strlen(text);
    o->bytes[o->len++] = 0x81;
    o->bytes[o->len++] = (uint8_t)(0x80 | n);
    memset(o->bytes + o->len, 0, 4);
    o->len += 4;
    memcpy(o->bytes + o->len, text, n);
    o->len += n;
    nghttp2_session_resume_data(x->ng, id);
    nghttp2_session_send(x->ng);
}

static int32_t ws_open(h2_client_t *x, ws_out_t *o)
{
    nghttp2_nv nv[] = {
        {(uint8_t *)":method", (uint8_t *)"CONNECT", 7, 7, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":protocol", (uint8_t *)"websocket", 9, 9, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":scheme", (uint8_t *)"http", 7, 4, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":path", (uint8_t *)"/ws", 5, 3, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)":authority", (uint8_t *)"example.com", 10, 11, NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"sec-websocket-version", (uint8_t *)"13", 21, 2, NGHTTP2_NV_FLAG_NONE},
    };
    nghttp2_data_provider body = {.source.ptr = o, .read_callback = ws_out_read};
    int32_t id = nghttp2_submit_request(x->ng, NULL, nv, 6, &body, NULL);
    nghttp2_session_send(x->ng);
    return id;
}

typedef struct received_t {
    int32_t id;
    const char *frame;
    size_t len;
} received_t;

static int received(h2_client_t *x, void *arg)
{
    received_t *r = arg;
    h2_stream_t *s = slot(x, r->id);
    return s->len >= r->len && memcmp(s->body + s->len - r->len, r->frame, r->len) == 0;
}

static int carried_closed(h2_client_t *x, void *arg)
{
    (void)x;
    return carried_closes >= (int)(intptr_t)arg;
}

static void *send_from_thread(void *arg)
{
    up_ws_any_send(arg, UP_WS_OP_TEXT, "thread", 6);
    return NULL;
}

/* An extended CONNECT becomes a WebSocket on its stream: 200, frames both ways in DATA (an app
 * thread's too), beside a plain request; the client's reset is the app's on_close (1006) and
 * the connection goes on. */
static void test_websocket_on_a_stream(void)
{
    harness_t h;
    start(&h);
    h2_client_t x;
    h2_open(&h, &x);
    int32_t first = h2_request(&x, "GET", "/sync", NULL); /* the server's SETTINGS come first */
    CHECK(h2_wait(&x, stream_closed, (void *)(intptr_t)first), "a plain stream");
    ws_out_t out = {0};
    int32_t id = ws_open(&x, &out);
    CHECK(id > 0, "CONNECT submitted: %d", id);
    ws_out_text(&x, id, &out, "hi");
    received_t echo = {id, "\x81\x02hi", 4};
    CHECK(h2_wait(&x, received, &echo), "the echo");
    CHECK(slot(&x, id)->status == 200, "status %d", slot(&x, id)->status);
    pthread_t t;
    pthread_create(&t, NULL, send_from_thread, carried);
    pthread_join(t, NULL);
    received_t from_thread = {id, "\x81\x06thread", 8};
    CHECK(h2_wait(&x, received, &from_thread), "what another thread sent");
    int32_t plain = h2_request(&x, "GET", "/sync", NULL);
    CHECK(h2_wait(&x, stream_closed, (void *)(intptr_t)plain), "a stream beside it");
    nghttp2_submit_rst_stream(x.ng, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
    nghttp2_session_send(x.ng);
    CHECK(h2_wait(&x, carried_closed, (void *)1), "on_close");
    CHECK(carried_code == 1006, "code %u", carried_code);
    CHECK(up_ws_any_send(carried, UP_WS_OP_TEXT, "late", 4) == -1, "a closed one refuses");
    plain = h2_request(&x, "GET", "/sync", NULL);
    CHECK(h2_wait(&x, stream_closed, (void *)(intptr_t)plain), "the connection goes on");
    h2_close(&x);
    stop(&h);
}

/* The connection ends while a stream carries a WebSocket: it closes with it (1006), and the
 * app's reference outlives both. */
static void test_connection_closed_under_a_websocket(void)
{
    harness_t h;
    start(&h);
    h2_client_t x;
    h2_open(&h, &x);
    int32_t first = h2_request(&x, "GET", "/sync", NULL);
    CHECK(h2_wait(&x, stream_closed, (void *)(intptr_t)first), "a plain stream");
    ws_out_t out = {0};
    int32_t id = ws_open(&x, &out);
    ws_out_text(&x, id, &out, "hi");
    received_t echo = {id, "\x81\x02hi", 4};
    CHECK(h2_wait(&x, received, &echo), "the echo");
    client_hang_up(&x.c);
    for (int i = 0; i < 50 && carried_closes == 0; i++)
        harness_turn(&h, 1);
    CHECK(carried_closes == 1 && carried_code == 1006, "on_close %d, code %u", carried_closes,
          carried_code);
    CHECK(up_ws_any_send(carried, UP_WS_OP_TEXT, "late", 4) == -1, "a closed one refuses");
    nghttp2_session_del(x.ng);
    client_close(&x.c);
    stop(&h);
}

int main(void)
{
    harness_watchdog(120);
    test_negotiation();
    test_request_body();
    test_uploads_past_the_windows();
    test_uploads_reset_midway();
    test_streams_answered_on_threads();
    test_reset_while_lent();
    test_close_while_lent();
    test_event_stream_on_its_stream();
    test_websocket_on_a_stream();
    test_connection_closed_under_a_websocket();
    return test_report("http2");
}
