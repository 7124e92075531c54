/* The TLS transport over socketpairs (transport_tls.c, tls_context.c, and the transport seam
 * in conn.c): TLS 1.2 and 1.3 handshakes and what is refused (older versions, a client
 * offering only other ALPN protocols, plain HTTP, a handshake never finished); bodies of a
 * megabyte, from memory and from a file, through a send buffer of a few KB, a handshake
 * flight larger than that buffer, a key update mid-download; pipelined requests in records
 * OpenSSL holds after one read (the transport's pending input), answered while the exchange
 * is lent and given back; a megabyte uploaded; a body streamed from another thread; the
 * close_notify of a close; session tickets, SNI, a chain from a CA file, context errors, and a
 * context replaced under a listener; TLS-ALPN-01 challenge certificates. RFC 8446 (TLS 1.3),
 * RFC 5246 (1.2), RFC 7301 (ALPN), RFC 6066 §3 (SNI), RFC 8996 (1.0 and 1.1 retired), RFC 8737
 * (TLS-ALPN-01). */

#define _GNU_SOURCE
#include <errno.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include "engine_harness.h"
#include "test.h"
#include "tls_harness.h"

#define HOST "Host: t\r\n"
#define MB (1024 * 1024)

/* ---------------------------------------------------------------- the application */

/* A thread a request is lent to: streams `total` pattern bytes in parts under back-pressure. */
typedef struct stream_t {
    up_exchange_t *ex;
    pthread_t thread;
    int started;
    size_t total, part, sent;
    uint64_t limit, max_backlog;
    int failures;
    atomic_int done;
} stream_t;

typedef struct app_t {
    int calls;
    uint64_t body_len, body_sum; /* what the last request's body held */
    int file_fd;                 /* "/file": this file, file_len bytes (the writer closes a dup) */
    size_t file_len;
    int lend;                    /* answer, but keep the exchange: the test gives it back */
    up_exchange_t *lent[64];
    int num_lent;
    stream_t *stream;
} app_t;

static app_t app;

static void *stream_run(void *arg)
{
    stream_t *s = arg;
    up_exchange_t *ex = s->ex;
    up_conn_t *conn = ex->conn;
    char *buf = malloc(s->part);
    up_response_start(ex, 200);
    up_response_end_head(ex, -1);
    while (s->sent < s->total) {
        size_t n = s->total - s->sent < s->part ? s->total - s->sent : s->part;
        harness_pattern(buf, n, s->sent);
        if (up_response_write(ex, buf, n) != UP_RESPONSE_OK || up_response_send(ex) != 0) {
            s->failures++;
            break;
        }
        s->sent += n;
        uint64_t backlog = up_conn_any_backlog(conn);
        if (backlog > s->max_backlog)
            s->max_backlog = backlog;
        atomic_int never = 0;
        if (backlog > s->limit && up_conn_any_wait_backlog(conn, s->limit, &never) != 0) {
            s->failures++;
            break;
        }
    }
    if (s->sent == s->total)
        up_response_finish(ex);
    free(buf);
    atomic_store(&s->done, 1);
    up_conn_lent_return(conn);
    return NULL;
}

static int path_is(const up_exchange_t *ex, const char *path)
{
    return up_slice_eq(ex->req->head.path, path, strlen(path));
}

static up_request_result_t app_on_request(up_exchange_t *ex, void *user)
{
    app_t *a = user;
    a->calls++;
    const up_request_body_t *body = &ex->req->body;
    a->body_len = body->len;
    a->body_sum = 0;
    if (body->mem != NULL) {
        for (size_t i = 0; i < body->len; i++)
            a->body_sum = a->body_sum * 31 + (unsigned char)body->mem[i];
    } else if (body->fd >= 0) {
        char buf[16384];
        ssize_t n;
        off_t at = 0;
        while ((n = pread(body->fd, buf, sizeof(buf), at)) > 0) {
            for (ssize_t i = 0; i < n; i++)
                a->body_sum = a->body_sum * 31 + (unsigned char)buf[i];
            at += n;
        }
    }
    if (path_is(ex, "/stream") && a->stream != NULL) {
        a->stream->ex = ex;
        a->stream->started = 1;
        pthread_create(&a->stream->thread, NULL, stream_run, a->stream);
        return UP_REQUEST_DEFERRED;
    }
    up_response_start(ex, 200);
    if (path_is(ex, "/big")) {
        char *big = malloc(MB);
        harness_pattern(big, MB, 0);
        up_response_end_head(ex, MB);
        up_response_write(ex, big, MB);
        free(big);
    } else if (path_is(ex, "/file")) {
        up_response_end_head(ex, (int64_t)a->file_len);
        up_response_sendfile(ex, dup(a->file_fd), 0, a->file_len);
    } else {
        char text[128];
        int n = snprintf(text, sizeof(text), "%.*s %s", (int)ex->req->head.target.len,
                         ex->req->head.target.base,
                         ex->conn->transport->secure ? up_tls_conn_version(ex->conn) : "plain");
        up_response_end_head(ex, n);
        up_response_write(ex, text, (size_t)n);
    }
    up_response_finish(ex);
    if (a->lend && a->num_lent < 64) {
        a->lent[a->num_lent++] = ex;
        return UP_REQUEST_DEFERRED;
    }
    return UP_REQUEST_DONE;
}

static void start(harness_t *h, const up_server_config_t *cfg)
{
    memset(&app, 0, sizeof(app));
    app.file_fd = -1;
    up_server_handler_t handler = {.on_request = app_on_request, .user = &app};
    harness_start(h, cfg, &handler);
}

static int no_conns(void *arg)
{
    return up_server_num_conns(((harness_t *)arg)->server) == 0;
}

/* A self-signed EC certificate for "localhost" and a context and listener of it. */
typedef struct tls_setup_t {
    harness_cert_t cert;
    up_tls_context_t *ctx;
    up_listener_t listener;
} tls_setup_t;

static void setup(harness_t *h, tls_setup_t *t, const harness_cert_opts_t *opts)
{
    static const harness_cert_opts_t localhost = {.cn = "localhost"};
    harness_cert_make(&t->cert, opts != NULL ? opts : &localhost);
    t->ctx = harness_tls_context(&t->cert, NULL, 0, NULL);
    harness_tls_listener(h, &t->listener, t->ctx);
}

static void teardown(tls_setup_t *t)
{
    up_tls_context_release(t->ctx);
    harness_cert_free(&t->cert);
}

/* Sends a request and reads its response; returns its status (0: none) and fills body. */
static int request(harness_t *h, client_t *c, const char *req, char *body, size_t body_size)
{
    response_t res;
    if (client_send_str(h, c, req) != 0 || !client_read_response(h, c, &res, 0, HARNESS_TIMEOUT_MS))
        return 0;
    if (body != NULL)
        snprintf(body, body_size, "%s", res.body);
    int status = res.status;
    response_free(&res);
    return status;
}

/* ---------------------------------------------------------------- handshakes */

static void test_requests_over_tls_1_2_and_1_3(void)
{
    static const struct {
        const char *name;
        int version;
        const char *expect;
    } cases[] = {
        {"TLS 1.3", TLS1_3_VERSION, "TLSv1.3"},
        {"TLS 1.2", TLS1_2_VERSION, "TLSv1.2"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        harness_t h;
        start(&h, NULL);
        tls_setup_t t;
        setup(&h, &t, NULL);
        client_tls_t opts = {.min_version = cases[i].version,
                             .max_version = cases[i].version,
                             .alpn = (const unsigned char *)"\x02h2\x08http/1.1",
                             .alpn_len = 12};
        client_t c;
        int ok = client_open_tls(&h, &c, &t.listener, 0, &opts);
        CHECK(ok, "%s: handshake", cases[i].name);
        const unsigned char *alpn = NULL;
        unsigned alpn_len = 0;
        SSL_get0_alpn_selected(c.ssl, &alpn, &alpn_len);
        CHECK(alpn_len == 8 && memcmp(alpn, "http/1.1", 8) == 0,
              "%s: ALPN picks http/1.1 over h2: %.*s", cases[i].name, (int)alpn_len,
              alpn != NULL ? (const char *)alpn : "");
        char body[128], expect[64];
        for (int n = 0; n < 2; n++) {
            snprintf(expect, sizeof(expect), "/r%d %s", n, cases[i].expect);
            char req[64];
            snprintf(req, sizeof(req), "GET /r%d HTTP/1.1\r\n" HOST "\r\n", n);
            int status = request(&h, &c, req, body, sizeof(body));
            CHECK(status == 200 && strcmp(body, expect) == 0,
                  "%s: request %d on one connection: %d %s", cases[i].name, n, status, body);
        }
        CHECK(up_server_num_conns(h.server) == 1 && !c.eof, "%s: kept alive", cases[i].name);
        client_close(&c);
        CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS),
              "%s: closed when the client leaves", cases[i].name);
        harness_stop(&h);
        teardown(&t);
    }
}

static void test_old_versions_and_foreign_protocols_are_refused(void)
{
    static const struct {
        const char *name;
        int min, max;
        const char *alpn;
        unsigned alpn_len;
        int ok;
    } cases[] = {
        {"TLS 1.0 only", TLS1_VERSION, TLS1_VERSION, NULL, 0, 0},
        {"TLS 1.1 only", TLS1_1_VERSION, TLS1_1_VERSION, NULL, 0, 0},
        {"TLS 1.0 to 1.2 gets 1.2", TLS1_VERSION, TLS1_2_VERSION, NULL, 0, 1},
        {"ALPN h2 alone", 0, 0, "\x02h2", 3, 0},
        {"ALPN http/1.0 alone", 0, 0, "\x08http/1.0", 9, 0},
        {"ALPN h2 and http/1.1", 0, 0, "\x02h2\x08http/1.1", 12, 1},
        {"no ALPN at all", 0, 0, NULL, 0, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        harness_t h;
        start(&h, NULL);
        tls_setup_t t;
        setup(&h, &t, NULL);
        client_tls_t opts = {.min_version = cases[i].min,
                             .max_version = cases[i].max,
                             .alpn = (const unsigned char *)cases[i].alpn,
                             .alpn_len = cases[i].alpn_len};
        client_t c;
        int ok = client_open_tls(&h, &c, &t.listener, 0, &opts);
        CHECK(ok == cases[i].ok, "%s: handshake %s", cases[i].name, ok ? "succeeded" : "failed");
        if (ok) {
            char body[64];
            CHECK(request(&h, &c, "GET / HTTP/1.1\r\n" HOST "\r\n", body, sizeof(body)) == 200,
                  "%s: served", cases[i].name);
        } else {
            CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS) && app.calls == 0,
                  "%s: the server closed it", cases[i].name);
        }
        client_close(&c);
        harness_stop(&h);
        teardown(&t);
    }
}

/* A raw client of a TLS listener: what it sends is not TLS. */
static void open_raw(harness_t *h, client_t *c, const up_listener_t *l, const char *early,
                     size_t early_len)
{
    int sv[2];
    memset(c, 0, sizeof(*c));
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv);
    c->fd = sv[1];
    if (early_len > 0 && send(c->fd, early, early_len, 0) != (ssize_t)early_len) {
        perror("send");
        exit(2);
    }
    c->conn = up_conn_loop_accept(h->server, l, &up_http1_protocol, sv[0], NULL);
}

static void test_plain_http_on_a_tls_port_gets_a_400_or_a_close(void)
{
    static const struct {
        const char *name;
        const char *bytes;
        size_t len;
        int answered;
    } cases[] = {
        {"GET", "GET / HTTP/1.1\r\nHost: t\r\n\r\n", 27, 1},
        {"POST with a body", "POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc", 51, 1},
        {"DELETE", "DELETE /x HTTP/1.1\r\nHost: t\r\n\r\n", 31, 1},
        {"a TLS record of garbage", "\x16\x03\x01\x00\x05hello", 10, 0},
        {"binary junk", "\x00\x01\x02\x03\x04\x05\x06\x07", 8, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        harness_t h;
        start(&h, NULL);
        tls_setup_t t;
        setup(&h, &t, NULL);
        client_t c;
        open_raw(&h, &c, &t.listener, cases[i].bytes, cases[i].len);
        int closed = client_wait_eof(&h, &c, HARNESS_TIMEOUT_MS);
        CHECK(closed, "%s: closed", cases[i].name);
        int plain400 = c.len > 12 && memcmp(c.in, "HTTP/1.1 400", 12) == 0 &&
                       memmem(c.in, c.len, "HTTPS", 5) != NULL;
        CHECK(plain400 == cases[i].answered, "%s: a plain 400 %s: %.40s", cases[i].name,
              cases[i].answered ? "expected" : "not expected", c.in != NULL ? c.in : "");
        CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS) && app.calls == 0,
              "%s: nothing reached the app", cases[i].name);
        /* The server is unharmed: a real client is served next. */
        client_t ok;
        CHECK(client_open_tls(&h, &ok, &t.listener, 0, NULL) &&
                  request(&h, &ok, "GET / HTTP/1.1\r\n" HOST "\r\n", NULL, 0) == 200,
              "%s: a TLS client is served after it", cases[i].name);
        client_close(&ok);
        client_close(&c);
        harness_stop(&h);
        teardown(&t);
    }
}

static void test_unfinished_handshakes_time_out(void)
{
    enum { IDLE = 40 };
    up_server_config_t cfg;
    up_server_config_defaults(&cfg);
    cfg.head_timeout_ms = 300;
    harness_t h;
    start(&h, &cfg);
    tls_setup_t t;
    setup(&h, &t, NULL);
    client_t idle[IDLE];
    for (int i = 0; i < IDLE; i++) {
        /* Nothing at all, or a record header and no more of the hello. */
        if (i % 2 == 0)
            open_raw(&h, &idle[i], &t.listener, NULL, 0);
        else
            open_raw(&h, &idle[i], &t.listener, "\x16\x03\x01\x02\x00\x01", 6);
    }
    uint64_t began = harness_now_ms();
    client_t real;
    CHECK(client_open_tls(&h, &real, &t.listener, 0, NULL) &&
              request(&h, &real, "GET /real HTTP/1.1\r\n" HOST "\r\n", NULL, 0) == 200,
          "a real client is served among %d unfinished handshakes", IDLE);
    int closed = 0;
    for (int i = 0; i < IDLE; i++)
        closed += client_wait_eof(&h, &idle[i], HARNESS_TIMEOUT_MS);
    uint64_t took = harness_now_ms() - began;
    CHECK(closed == IDLE && took < 2500, "%d of %d closed after the head timeout, in %llu ms",
          closed, IDLE, (unsigned long long)took);
    for (int i = 0; i < IDLE; i++)
        CHECK(idle[i].len == 0, "an unfinished handshake gets no answer: %zu bytes", idle[i].len);
    CHECK(up_server_num_conns(h.server) == 1 && !real.eof, "the real client is still open");
    for (int i = 0; i < IDLE; i++)
        client_close(&idle[i]);
    client_close(&real);
    harness_stop(&h);
    teardown(&t);
}

/* A graceful stop while the server has not finished a client's handshake (TLS 1.3: the client
 * is done once it sent its Finished, which the server has not read yet): the handshake is the
 * start of a first request, as a partial head is, so the request after it is answered and then
 * the connection closes; a client that sends none is closed after the head timeout, not
 * keep-alive's. */
static void test_a_stop_during_a_handshake_answers_the_request_after_it(void)
{
    for (int sends = 1; sends >= 0; sends--) {
        up_server_config_t cfg;
        up_server_config_defaults(&cfg);
        cfg.head_timeout_ms = 300;
        harness_t h;
        start(&h, &cfg);
        tls_setup_t t;
        setup(&h, &t, NULL);
        client_t c;
        CHECK(client_open_tls(&h, &c, &t.listener, 0, NULL), "sends %d: handshake", sends);
        CHECK(c.conn->transport->handshaking(c.conn),
              "sends %d: the server has not read the client's Finished yet", sends);
        up_server_stop(h.server);
        uint64_t began = harness_now_ms();
        if (sends) {
            response_t res;
            int answered = client_send_str(&h, &c, "GET / HTTP/1.1\r\n" HOST "\r\n") == 0 &&
                           client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
            CHECK(answered, "the request after the handshake is answered");
            if (answered) {
                CHECK(res.status == 200 && res.close, "a 200 that closes: %d", res.status);
                response_free(&res);
            }
        }
        CHECK(client_wait_eof(&h, &c, HARNESS_TIMEOUT_MS) && harness_now_ms() - began < 2500,
              "sends %d: then closed, within the head timeout", sends);
        CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS), "sends %d: no connection left",
              sends);
        client_close(&c);
        harness_stop(&h);
        teardown(&t);
    }
}

/* ---------------------------------------------------------------- large bodies, small buffers */

static int response_complete(client_t *c, void *arg)
{
    response_t res;
    long r = response_parse(c->in + c->pos, c->len - c->pos, c->eof, 0, &res);
    if (r > 0) {
        *(response_t *)arg = res;
        c->pos += (size_t)r;
        return 1;
    }
    return r < 0 || c->eof;
}

/* Reads a response at most max_read bytes a turn; returns 1 with res filled. */
static int read_slowly(harness_t *h, client_t *c, size_t max_read, response_t *res)
{
    memset(res, 0, sizeof(*res));
    return client_wait(h, c, max_read, response_complete, res, 6 * HARNESS_TIMEOUT_MS) &&
           res->status != 0;
}

static void test_megabyte_bodies_through_a_small_send_buffer(void)
{
    static const struct {
        const char *name;
        const char *path;
        size_t max_read;
    } cases[] = {
        {"memory, fast reader", "/big", SIZE_MAX},
        {"memory, slow reader", "/big", 3000},
        {"file, fast reader", "/file", SIZE_MAX},
        {"file, slow reader", "/file", 3000},
    };
    static char expect[MB];
    harness_pattern(expect, MB, 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        harness_t h;
        start(&h, NULL);
        app.file_fd = harness_temp_file(expect, MB);
        app.file_len = MB;
        tls_setup_t t;
        setup(&h, &t, NULL);
        client_t c;
        CHECK(client_open_tls(&h, &c, &t.listener, 4096, NULL), "%s: handshake", cases[i].name);
        for (int round = 0; round < 2; round++) {
            char req[64];
            snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\n" HOST "\r\n", cases[i].path);
            client_send_str(&h, &c, req);
            response_t res;
            int got = read_slowly(&h, &c, cases[i].max_read, &res);
            CHECK(got && res.status == 200 && res.body_len == MB &&
                      memcmp(res.body, expect, MB) == 0,
                  "%s, round %d: every byte in order: %zu of %d", cases[i].name, round,
                  got ? res.body_len : 0, MB);
            if (got)
                response_free(&res);
        }
        CHECK(!c.eof && up_server_num_conns(h.server) == 1, "%s: still open", cases[i].name);
        close(app.file_fd);
        client_close(&c);
        harness_stop(&h);
        teardown(&t);
    }
}

static void test_handshake_flight_larger_than_the_send_buffer(void)
{
    harness_t h;
    start(&h, NULL);
    tls_setup_t t;
    harness_cert_opts_t big = {.cn = "localhost", .rsa = 1, .padding = 40000};
    setup(&h, &t, &big);
    for (int version = TLS1_2_VERSION; version <= TLS1_3_VERSION; version++) {
        client_tls_t opts = {.min_version = version, .max_version = version};
        client_t c;
        int ok = client_open_tls(&h, &c, &t.listener, 4096, &opts);
        CHECK(ok, "version %x: a 40 KB certificate through a 4 KB send buffer", version);
        X509 *peer = ok ? SSL_get1_peer_certificate(c.ssl) : NULL;
        CHECK(peer != NULL && X509_cmp(peer, t.cert.cert) == 0, "the certificate came whole");
        X509_free(peer);
        CHECK(ok && request(&h, &c, "GET / HTTP/1.1\r\n" HOST "\r\n", NULL, 0) == 200,
              "then a request");
        client_close(&c);
    }
    harness_stop(&h);
    teardown(&t);
}

static void test_key_update_during_a_download(void)
{
    static char expect[MB];
    harness_pattern(expect, MB, 0);
    harness_t h;
    start(&h, NULL);
    tls_setup_t t;
    setup(&h, &t, NULL);
    client_t c;
    CHECK(client_open_tls(&h, &c, &t.listener, 4096, NULL), "handshake");
    client_send_str(&h, &c, "GET /big HTTP/1.1\r\n" HOST "\r\n");
    /* A quarter in, the client asks for new keys both ways (RFC 8446 §4.6.3) while the server
     * waits for it to read. */
    CHECK(client_wait_bytes(&h, &c, MB / 4, 2 * HARNESS_TIMEOUT_MS), "a quarter arrived");
    CHECK(SSL_key_update(c.ssl, SSL_KEY_UPDATE_REQUESTED) == 1 && SSL_do_handshake(c.ssl) == 1,
          "the client sends its key update");
    response_t res;
    int got = read_slowly(&h, &c, 5000, &res);
    CHECK(got && res.body_len == MB && memcmp(res.body, expect, MB) == 0,
          "every byte in order across the key update: %zu", got ? res.body_len : 0);
    if (got)
        response_free(&res);
    CHECK(request(&h, &c, "GET /after HTTP/1.1\r\n" HOST "\r\n", NULL, 0) == 200,
          "the connection goes on under the new keys");
    client_close(&c);
    harness_stop(&h);
    teardown(&t);
}

/* ---------------------------------------------------------------- input OpenSSL holds */

/* Records of many requests arrive in one read: OpenSSL decrypts one per call and keeps the rest,
 * which no event announces. Answered inline, and with every exchange lent and given back later
 * (the read then waits for the end of a wake-up). */
static void test_pipelined_records_are_all_answered(void)
{
    enum { N = 24 };
    for (int lend = 0; lend <= 1; lend++) {
        harness_t h;
        start(&h, NULL);
        app.lend = lend;
        tls_setup_t t;
        setup(&h, &t, NULL);
        client_t c;
        CHECK(client_open_tls(&h, &c, &t.listener, 0, NULL), "handshake");
        for (int i = 0; i < N; i++) {
            char req[64];
            int n = snprintf(req, sizeof(req), "GET /p%d HTTP/1.1\r\n" HOST "\r\n", i);
            /* One record each, all in the socket before the server reads. */
            CHECK(client_tls_write(&c, req, (size_t)n) == n, "request %d written", i);
        }
        int answered = 0;
        uint64_t deadline = harness_now_ms() + 2 * HARNESS_TIMEOUT_MS;
        while (answered < N && harness_now_ms() < deadline) {
            response_t res;
            client_read_some(&c, SIZE_MAX);
            long r = response_parse(c.in + c.pos, c.len - c.pos, c.eof, 0, &res);
            if (r > 0) {
                char expect[32];
                snprintf(expect, sizeof(expect), "/p%d TLSv1.3", answered);
                CHECK(strcmp(res.body, expect) == 0, "lend %d: response %d: %s", lend, answered,
                      res.body);
                c.pos += (size_t)r;
                answered++;
                response_free(&res);
                continue;
            }
            harness_turn(&h, 1);
            /* The binding gives the exchanges back from another turn, through the mail. */
            for (int i = 0; i < app.num_lent; i++)
                up_conn_lent_return(app.lent[i]->conn);
            app.num_lent = 0;
        }
        CHECK(answered == N && app.calls == N, "lend %d: %d of %d answered, %d app calls", lend,
              answered, N, app.calls);
        client_close(&c);
        harness_stop(&h);
        teardown(&t);
    }
}

static void test_megabyte_upload(void)
{
    static const struct {
        const char *name;
        const char *framing;
    } cases[] = {
        {"content-length", "Content-Length: 1048576\r\n"},
        {"chunked", "Transfer-Encoding: chunked\r\n"},
    };
    static char data[MB];
    harness_pattern(data, MB, 7);
    uint64_t sum = 0;
    for (size_t i = 0; i < MB; i++)
        sum = sum * 31 + (unsigned char)data[i];
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        harness_t h;
        start(&h, NULL);
        tls_setup_t t;
        setup(&h, &t, NULL);
        client_t c;
        CHECK(client_open_tls(&h, &c, &t.listener, 0, NULL), "handshake");
        char head[128];
        snprintf(head, sizeof(head), "POST /up HTTP/1.1\r\n" HOST "%s\r\n", cases[k].framing);
        client_send_str(&h, &c, head);
        int chunked = cases[k].framing[0] == 'T';
        for (size_t at = 0; at < MB; at += 10000) {
            size_t n = MB - at < 10000 ? MB - at : 10000;
            char size[16];
            if (chunked) {
                snprintf(size, sizeof(size), "%zx\r\n", n);
                client_send_str(&h, &c, size);
            }
            client_send(&h, &c, data + at, n);
            if (chunked)
                client_send_str(&h, &c, "\r\n");
        }
        if (chunked)
            client_send_str(&h, &c, "0\r\n\r\n");
        response_t res;
        int got = client_read_response(&h, &c, &res, 0, 2 * HARNESS_TIMEOUT_MS);
        CHECK(got && res.status == 200 && app.body_len == MB && app.body_sum == sum,
              "%s: the app got the megabyte: %llu bytes", cases[k].name,
              (unsigned long long)app.body_len);
        if (got)
            response_free(&res);
        client_close(&c);
        harness_stop(&h);
        teardown(&t);
    }
}

static int stream_done(client_t *c, void *arg)
{
    size_t *from = arg;
    if (c->len > *from && memmem(c->in + *from, c->len - *from, "\r\n0\r\n\r\n", 7) != NULL)
        return 1;
    if (c->len > 7)
        *from = c->len - 7;
    return c->eof;
}

static void test_lent_exchange_streams_from_a_thread(void)
{
    enum { TOTAL = MB, PART = 16384, LIMIT = 65536 };
    harness_t h;
    start(&h, NULL);
    tls_setup_t t;
    setup(&h, &t, NULL);
    stream_t s = {.total = TOTAL, .part = PART, .limit = LIMIT};
    app.stream = &s;
    client_t c;
    CHECK(client_open_tls(&h, &c, &t.listener, 4096, NULL), "handshake");
    client_send_str(&h, &c,
                    "GET /stream HTTP/1.1\r\n" HOST "\r\nGET /after HTTP/1.1\r\n" HOST "\r\n");
    size_t scanned = 0;
    CHECK(client_wait(&h, &c, 4096, stream_done, &scanned, 6 * HARNESS_TIMEOUT_MS),
          "the stream ended: %zu bytes in, %zu sent", c.len, s.sent);
    response_t res;
    static char expect[TOTAL];
    harness_pattern(expect, TOTAL, 0);
    int got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
    CHECK(got && res.body_len == TOTAL && memcmp(res.body, expect, TOTAL) == 0,
          "every byte from the thread, in order: %zu", got ? res.body_len : 0);
    if (got)
        response_free(&res);
    got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
    CHECK(got && strcmp(res.body, "/after TLSv1.3") == 0, "then the pipelined request: %s",
          got ? res.body : "(none)");
    if (got)
        response_free(&res);
    if (s.started)
        pthread_join(s.thread, NULL);
    CHECK(s.failures == 0 && s.max_backlog <= LIMIT + PART + 64,
          "no failure, the backlog peaked at %llu", (unsigned long long)s.max_backlog);
    client_close(&c);
    harness_stop(&h);
    teardown(&t);
}

static void test_close_ends_with_close_notify(void)
{
    harness_t h;
    start(&h, NULL);
    tls_setup_t t;
    setup(&h, &t, NULL);
    client_t c;
    CHECK(client_open_tls(&h, &c, &t.listener, 0, NULL), "handshake");
    CHECK(request(&h, &c, "GET / HTTP/1.1\r\n" HOST "Connection: close\r\n\r\n", NULL, 0) == 200,
          "answered");
    CHECK(client_wait_eof(&h, &c, HARNESS_TIMEOUT_MS), "then closed");
    CHECK(SSL_get_shutdown(c.ssl) & SSL_RECEIVED_SHUTDOWN, "with a close_notify first");
    client_close(&c);
    CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS), "and gone");
    harness_stop(&h);
    teardown(&t);
}

/* ---------------------------------------------------------------- contexts */

/* A session from a handshake with ctx_a, then whether ctx_b resumes it. */
static int resumes(int version, up_tls_context_t *ctx_a, up_tls_context_t *ctx_b)
{
    harness_t h;
    start(&h, NULL);
    up_listener_t la, lb;
    harness_tls_listener(&h, &la, ctx_a);
    harness_tls_listener(&h, &lb, ctx_b);
    client_tls_t opts = {.min_version = version, .max_version = version};
    client_t c;
    int resumed = -1;
    if (client_open_tls(&h, &c, &la, 0, &opts) &&
        request(&h, &c, "GET / HTTP/1.1\r\n" HOST "\r\n", NULL, 0) == 200) {
        opts.session = SSL_get1_session(c.ssl);
        /* A clean close: OpenSSL makes a session cut off without one unresumable. */
        client_shut_write(&c);
        client_close(&c);
        if (opts.session != NULL && client_open_tls(&h, &c, &lb, 0, &opts) &&
            request(&h, &c, "GET / HTTP/1.1\r\n" HOST "\r\n", NULL, 0) == 200)
            resumed = SSL_session_reused(c.ssl) && up_tls_conn_resumed(c.conn);
        SSL_SESSION_free(opts.session);
    }
    client_close(&c);
    harness_stop(&h);
    return resumed;
}

static void test_sessions_resume_by_ticket(void)
{
    harness_cert_t cert;
    harness_cert_opts_t opts = {.cn = "localhost"};
    harness_cert_make(&cert, &opts);
    unsigned char secret[UP_TLS_TICKET_SECRET_SIZE], other[UP_TLS_TICKET_SECRET_SIZE];
    RAND_bytes(secret, sizeof(secret));
    RAND_bytes(other, sizeof(other));
    up_tls_context_t *a = harness_tls_context(&cert, NULL, 0, secret);
    up_tls_context_t *same = harness_tls_context(&cert, NULL, 0, secret);
    up_tls_context_t *stranger = harness_tls_context(&cert, NULL, 0, other);
    for (int version = TLS1_2_VERSION; version <= TLS1_3_VERSION; version++) {
        CHECK(resumes(version, a, a) == 1, "version %x: resumed on the same context", version);
        CHECK(resumes(version, a, same) == 1,
              "version %x: resumed by another context with the secret (a sibling worker, a "
              "reload)",
              version);
        CHECK(resumes(version, a, stranger) == 0,
              "version %x: another secret does a full handshake instead", version);
    }
    up_tls_context_release(a);
    up_tls_context_release(same);
    up_tls_context_release(stranger);
    harness_cert_free(&cert);
}

static void test_sni_picks_the_certificate(void)
{
    harness_cert_t def, api, wild;
    harness_cert_opts_t o_def = {.cn = "default.test"}, o_api = {.cn = "api.test"},
                        o_wild = {.cn = "*.wild.test", .rsa = 1};
    harness_cert_make(&def, &o_def);
    harness_cert_make(&api, &o_api);
    harness_cert_make(&wild, &o_wild);
    up_tls_cert_t hosts[] = {
        {.host = "api.test", .cert_file = api.cert_file, .key_file = api.key_file},
        {.host = "*.wild.test", .cert_file = wild.cert_file, .key_file = wild.key_file},
    };
    up_tls_context_t *ctx = harness_tls_context(&def, hosts, 2, NULL);
    static const struct {
        const char *sni;
        const char *cn;
    } cases[] = {
        {"api.test", "api.test"},        {"API.Test", "api.test"},
        {"x.wild.test", "*.wild.test"},  {"a.b.wild.test", "default.test"},
        {"wild.test", "default.test"},   {"other.test", "default.test"},
        {NULL, "default.test"},
    };
    harness_t h;
    start(&h, NULL);
    up_listener_t l;
    harness_tls_listener(&h, &l, ctx);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        client_tls_t opts = {.sni = cases[i].sni};
        client_t c;
        int ok = client_open_tls(&h, &c, &l, 0, &opts);
        char cn[128] = "";
        X509 *peer = ok ? SSL_get1_peer_certificate(c.ssl) : NULL;
        if (peer != NULL)
            X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, cn, sizeof(cn));
        X509_free(peer);
        CHECK(ok && strcmp(cn, cases[i].cn) == 0, "SNI %s gets %s: %s",
              cases[i].sni ? cases[i].sni : "(none)", cases[i].cn, cn);
        CHECK(ok && request(&h, &c, "GET / HTTP/1.1\r\n" HOST "\r\n", NULL, 0) == 200 &&
                  strcmp(up_tls_conn_server_name(c.conn), cases[i].sni ? cases[i].sni : "") == 0,
              "SNI %s: served, the name kept", cases[i].sni ? cases[i].sni : "(none)");
        client_close(&c);
        char subject[128];
        CHECK(up_tls_context_subject(ctx, cases[i].sni, subject, sizeof(subject)) == 0 &&
                  strstr(subject, cases[i].cn) != NULL,
              "the context's subject for %s: %s", cases[i].sni ? cases[i].sni : "(none)", subject);
    }
    harness_stop(&h);
    up_tls_context_release(ctx);
    harness_cert_free(&def);
    harness_cert_free(&api);
    harness_cert_free(&wild);
}

static void test_chain_from_the_ca_file(void)
{
    harness_cert_t ca, leaf;
    harness_cert_opts_t o_ca = {.cn = "UP! test CA", .ca = 1};
    harness_cert_make(&ca, &o_ca);
    harness_cert_opts_t o_leaf = {.cn = "localhost", .issuer = &ca};
    harness_cert_make(&leaf, &o_leaf);
    for (int with_chain = 0; with_chain <= 1; with_chain++) {
        up_tls_config_t cfg = {.cert = {.cert_file = leaf.cert_file,
                                        .key_file = leaf.key_file,
                                        .ca_file = with_chain ? ca.cert_file : NULL}};
        char err[256];
        up_tls_context_t *ctx = up_tls_context_new(&cfg, err, sizeof(err));
        CHECK(ctx != NULL, "context: %s", ctx ? "" : err);
        harness_t h;
        start(&h, NULL);
        up_listener_t l;
        harness_tls_listener(&h, &l, ctx);
        client_t c;
        client_open_tls(&h, &c, &l, 0, NULL);
        STACK_OF(X509) *chain = SSL_get_peer_cert_chain(c.ssl);
        int sent = chain != NULL ? sk_X509_num(chain) : 0;
        CHECK(sent == 1 + with_chain, "with%s -a: %d certificates sent", with_chain ? "" : "out",
              sent);
        client_close(&c);
        /* A client that trusts the CA alone verifies the server. */
        client_tls_t opts = {.ca_file = ca.cert_file, .sni = "localhost"};
        CHECK(client_open_tls(&h, &c, &l, 0, &opts) &&
                  SSL_get_verify_result(c.ssl) == X509_V_OK,
              "with%s -a: verified against the CA", with_chain ? "" : "out");
        client_close(&c);
        harness_stop(&h);
        up_tls_context_release(ctx);
    }
    harness_cert_free(&ca);
    harness_cert_free(&leaf);
}

static void test_context_errors_name_the_file(void)
{
    harness_cert_t a, b, locked;
    harness_cert_opts_t oa = {.cn = "a"}, ob = {.cn = "b"}, ol = {.cn = "l", .password = "s3cret"};
    harness_cert_make(&a, &oa);
    harness_cert_make(&b, &ob);
    harness_cert_make(&locked, &ol);
    const struct {
        const char *name;
        up_tls_cert_t cert;
        const char *password;
        const char *host;
        const char *expect; /* NULL: it loads */
    } cases[] = {
        {"a certificate and its key", {NULL, a.cert_file, a.key_file, NULL}, NULL, NULL, NULL},
        {"no certificate file", {NULL, "/nonexistent/c.pem", a.key_file, NULL}, NULL, NULL,
         "cannot load the certificate /nonexistent/c.pem"},
        {"no key file", {NULL, a.cert_file, "/nonexistent/k.pem", NULL}, NULL, NULL,
         "cannot read the key /nonexistent/k.pem"},
        {"a key file holding a certificate", {NULL, a.cert_file, a.cert_file, NULL}, NULL, NULL,
         "no private key in"},
        {"another certificate's key", {NULL, a.cert_file, b.key_file, NULL}, NULL, NULL,
         "does not match the certificate"},
        {"an encrypted key, no passphrase", {NULL, locked.cert_file, locked.key_file, NULL}, NULL,
         NULL, "is encrypted and no passphrase was given"},
        {"an encrypted key, a wrong passphrase", {NULL, locked.cert_file, locked.key_file, NULL},
         "wrong", NULL, "cannot decrypt the key"},
        {"an encrypted key and its passphrase", {NULL, locked.cert_file, locked.key_file, NULL},
         "s3cret", NULL, NULL},
        {"a CA file with no certificate", {NULL, a.cert_file, a.key_file, a.key_file}, NULL, NULL,
         "no certificate in the CA file"},
        {"a host certificate without a name", {NULL, a.cert_file, a.key_file, NULL}, NULL, "",
         "needs a host name"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        up_tls_cert_t host = {
            .host = cases[i].host, .cert_file = b.cert_file, .key_file = b.key_file};
        up_tls_config_t cfg = {.cert = cases[i].cert,
                               .key_password = cases[i].password,
                               .hosts = &host,
                               .num_hosts = cases[i].host != NULL};
        char err[512] = "";
        up_tls_context_t *ctx = up_tls_context_new(&cfg, err, sizeof(err));
        if (cases[i].expect == NULL)
            CHECK(ctx != NULL, "%s: loads: %s", cases[i].name, err);
        else
            CHECK(ctx == NULL && strstr(err, cases[i].expect) != NULL, "%s: \"%s\"", cases[i].name,
                  err);
        CHECK(ERR_peek_error() == 0, "%s: OpenSSL's error queue is left empty", cases[i].name);
        up_tls_context_release(ctx);
    }
    harness_cert_free(&a);
    harness_cert_free(&b);
    harness_cert_free(&locked);
}

static int peer_cn_is(harness_t *h, const up_listener_t *l, const char *cn)
{
    client_t c;
    char got[64] = "";
    if (client_open_tls(h, &c, l, 0, NULL)) {
        X509 *peer = SSL_get1_peer_certificate(c.ssl);
        X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, got, sizeof(got));
        X509_free(peer);
    }
    client_close(&c);
    return strcmp(got, cn) == 0;
}

static int listener_has(void *arg)
{
    void **pair = arg;
    return ((up_listener_t *)pair[0])->transport_ctx == pair[1];
}

static void test_replaced_context_serves_new_connections(void)
{
    harness_cert_t old_cert, new_cert;
    harness_cert_opts_t o_old = {.cn = "old"}, o_new = {.cn = "new"};
    harness_cert_make(&old_cert, &o_old);
    harness_cert_make(&new_cert, &o_new);
    up_tls_context_t *old_ctx = harness_tls_context(&old_cert, NULL, 0, NULL);
    up_tls_context_t *new_ctx = harness_tls_context(&new_cert, NULL, 0, NULL);
    harness_t h;
    start(&h, NULL);
    const char *err = NULL;
    CHECK(up_server_listen_with(h.server, "127.0.0.1", "0", &up_transport_tls, old_ctx,
                                &up_http1_protocol, &err) == 0,
          "a TLS listener: %s", err ? err : "");
    up_listener_t *l = h.server->listeners;
    CHECK(peer_cn_is(&h, l, "old"), "the first certificate");
    client_t open;
    CHECK(client_open_tls(&h, &open, l, 0, NULL), "a connection before the reload");
    /* Both contexts released by their makers at once: the server holds what it needs. */
    up_server_any_replace_context(h.server, &up_transport_tls, old_ctx, new_ctx);
    void *pair[2] = {l, new_ctx};
    up_tls_context_release(old_ctx);
    up_tls_context_release(new_ctx);
    CHECK(harness_wait(&h, listener_has, pair, HARNESS_TIMEOUT_MS), "the loop swapped it");
    CHECK(peer_cn_is(&h, l, "new"), "new connections get the new certificate");
    CHECK(request(&h, &open, "GET / HTTP/1.1\r\n" HOST "\r\n", NULL, 0) == 200,
          "the connection made before goes on");
    client_close(&open);
    harness_stop(&h);
    harness_cert_free(&old_cert);
    harness_cert_free(&new_cert);
}

/* Appends the file at path to out. */
static void append_file(FILE *out, const char *path)
{
    FILE *in = fopen(path, "r");
    char buf[4096];
    size_t n;
    while (in != NULL && (n = fread(buf, 1, sizeof(buf), in)) > 0)
        fwrite(buf, 1, n, out);
    if (in != NULL)
        fclose(in);
}

/* TLS-ALPN-01 (RFC 8737, tls_acme.c): a client offering acme-tls/1 alone gets the challenge
 * certificate of its SNI name from the context's directory, and acme-tls/1; one offering
 * http/1.1 too gets the served certificate; a name without a file, or no name, fails. */
static void test_tls_alpn_01_answers_from_the_challenge_directory(void)
{
    harness_cert_t def, challenge;
    harness_cert_opts_t o_def = {.cn = "acme.test"},
                        o_challenge = {.cn = "acme.test", .alt = "challenge.test"};
    harness_cert_make(&def, &o_def);
    harness_cert_make(&challenge, &o_challenge);
    char dir[] = "/tmp/up-acme-test-XXXXXX", path[128];
    CHECK(mkdtemp(dir) != NULL, "a challenge directory");
    snprintf(path, sizeof(path), "%s/acme.test.pem", dir);
    FILE *f = fopen(path, "w");
    append_file(f, challenge.cert_file);
    append_file(f, challenge.key_file);
    fclose(f);
    up_tls_config_t cfg = {.cert = {.cert_file = def.cert_file, .key_file = def.key_file},
                           .acme_challenge_dir = dir};
    char err[256] = "";
    up_tls_context_t *ctx = up_tls_context_new(&cfg, err, sizeof(err));
    CHECK(ctx != NULL, "a context with a challenge directory: %s", err);
    static const unsigned char acme[] = "\012acme-tls/1", both[] = "\012acme-tls/1\010http/1.1";
    static const struct {
        const char *name;
        int version;
        const unsigned char *alpn;
        unsigned alpn_len;
        const char *sni;
        int ok, challenge;
    } cases[] = {
        {"acme-tls/1 alone, TLS 1.3", TLS1_3_VERSION, acme, sizeof(acme) - 1, "acme.test", 1, 1},
        {"acme-tls/1 alone, TLS 1.2", TLS1_2_VERSION, acme, sizeof(acme) - 1, "acme.test", 1, 1},
        {"acme-tls/1 beside http/1.1", TLS1_3_VERSION, both, sizeof(both) - 1, "acme.test", 1, 0},
        {"a name without a challenge", TLS1_3_VERSION, acme, sizeof(acme) - 1, "other.test", 0, 0},
        {"no name", TLS1_3_VERSION, acme, sizeof(acme) - 1, NULL, 0, 0},
        {"a name that climbs out", TLS1_3_VERSION, acme, sizeof(acme) - 1, "..", 0, 0},
    };
    harness_t h;
    start(&h, NULL);
    up_listener_t l;
    harness_tls_listener(&h, &l, ctx);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        client_tls_t opts = {.min_version = cases[i].version, .max_version = cases[i].version,
                             .alpn = cases[i].alpn, .alpn_len = cases[i].alpn_len,
                             .sni = cases[i].sni};
        client_t c;
        int ok = client_open_tls(&h, &c, &l, 0, &opts);
        CHECK(ok == cases[i].ok, "%s: the handshake %s", cases[i].name,
              cases[i].ok ? "succeeds" : "fails");
        if (ok) {
            X509 *peer = SSL_get1_peer_certificate(c.ssl);
            const unsigned char *alpn = NULL;
            unsigned alpn_len = 0;
            SSL_get0_alpn_selected(c.ssl, &alpn, &alpn_len);
            int is_challenge = peer != NULL && X509_cmp(peer, challenge.cert) == 0;
            CHECK(is_challenge == cases[i].challenge, "%s: the %s certificate", cases[i].name,
                  cases[i].challenge ? "challenge" : "served");
            const char *want = cases[i].challenge ? "acme-tls/1" : "http/1.1";
            CHECK(alpn_len == strlen(want) && memcmp(alpn, want, alpn_len) == 0,
                  "%s: ALPN %s", cases[i].name, want);
            X509_free(peer);
        }
        client_close(&c);
    }
    harness_stop(&h);
    up_tls_context_release(ctx);
    unlink(path);
    rmdir(dir);
    harness_cert_free(&def);
    harness_cert_free(&challenge);
}

int main(void)
{
    harness_watchdog(240);
    test_requests_over_tls_1_2_and_1_3();
    test_old_versions_and_foreign_protocols_are_refused();
    test_plain_http_on_a_tls_port_gets_a_400_or_a_close();
    test_unfinished_handshakes_time_out();
    test_a_stop_during_a_handshake_answers_the_request_after_it();
    test_megabyte_bodies_through_a_small_send_buffer();
    test_handshake_flight_larger_than_the_send_buffer();
    test_key_update_during_a_download();
    test_pipelined_records_are_all_answered();
    test_megabyte_upload();
    test_lent_exchange_streams_from_a_thread();
    test_close_ends_with_close_notify();
    test_sessions_resume_by_ticket();
    test_sni_picks_the_certificate();
    test_chain_from_the_ca_file();
    test_context_errors_name_the_file();
    test_replaced_context_serves_new_connections();
    test_tls_alpn_01_answers_from_the_challenge_directory();
    return test_report("transport_tls");
}
