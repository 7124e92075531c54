/* Connection and HTTP/1 tests over socketpairs (conn.c, http1.c, server.c), with a C handler
 * instead of a binding: requests answered inline, kept alive, pipelined, split byte by byte,
 * rejected; the pipeline limit; an exchange lent to another thread that streams its response
 * under back-pressure, or finds the client gone; timeouts; a switch to another protocol; and
 * freeing a server with connections open. Rejections follow RFC 9112 (§2.2 message parsing,
 * §5 fields, §6.3 body length, §7.1 chunked, §9.3 persistence, §9.6 closing) and RFC 9110
 * §10.1.1 (Expect: 100-continue). */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "engine_harness.h"
#include "test.h"

/* ---------------------------------------------------------------- the application */

/* A thread a request is lent to: it streams a chunked body of `total` pattern bytes in parts,
 * handing each to the loop and waiting whenever more than `limit` bytes are unwritten. */
typedef struct stream_t {
    up_exchange_t *ex;
    size_t total, part;
    uint64_t limit;
    int hold;       /* wait for `go` before giving the exchange back */
    int stage_only; /* hand nothing over before giving the exchange back */
    pthread_t thread;
    int started;
    atomic_int cancel;      /* set by the test past its deadline: stop waiting */
    atomic_int waiting_now; /* inside up_conn_any_wait_backlog */
    atomic_int at_hold, go, done;
    /* What the thread saw; the test checks it after joining. */
    int waits, wait_failures, send_failures, broken_seen;
    up_response_error_t write_error;
    uint64_t max_backlog;
    size_t sent;
} stream_t;

/* What the handler does and what it saw. */
typedef struct app_t {
    int calls;
    char seen[16][128]; /* "METHOD target body=..." per call, the first 16 */
    size_t big_body;    /* > 0: answer every request with that many pattern bytes */
    stream_t *stream;   /* "/stream" lends the exchange to this thread */
    int echo_closes;    /* on_close calls of the echo protocol */
    size_t echoed;
    up_exchange_t *lent; /* "/lend" lends the exchange and leaves it here */
} app_t;

static app_t app;

static void *stream_run(void *arg)
{
    stream_t *s = arg;
    up_exchange_t *ex = s->ex;
    char *buf = malloc(s->part);
    up_response_start(ex, 200);
    up_response_add_header(ex, "content-type", 12, "application/octet-stream", 24);
    up_response_end_head(ex, -1);
    int ok = 1;
    while (ok && s->sent < s->total) {
        size_t n = s->total - s->sent < s->part ? s->total - s->sent : s->part;
        harness_pattern(buf, n, s->sent);
        up_response_error_t e = up_response_write(ex, buf, n);
        if (e != UP_RESPONSE_OK) {
            s->write_error = e;
            break;
        }
        s->sent += n;
        if (s->stage_only)
            continue;
        /* Parts go over through the writer and straight through the connection, in turn. */
        int r = s->sent / s->part % 2 ? up_response_send(ex) : up_conn_lent_send(ex->conn);
        if (r != 0) {
            s->send_failures++;
            break;
        }
        uint64_t backlog = up_conn_any_backlog(ex->conn);
        if (backlog > s->max_backlog)
            s->max_backlog = backlog;
        if (backlog > s->limit) {
            s->waits++;
            atomic_store(&s->waiting_now, 1);
            if (up_conn_any_wait_backlog(ex->conn, s->limit, &s->cancel) != 0) {
                s->wait_failures++;
                ok = 0;
            }
            atomic_store(&s->waiting_now, 0);
        }
    }
    if (ok && s->sent == s->total)
        up_response_finish(ex);
    s->broken_seen = up_conn_any_broken(ex->conn);
    free(buf);
    if (s->hold) {
        atomic_store(&s->at_hold, 1);
        while (!atomic_load(&s->go) && !s->cancel)
            usleep(1000);
    }
    atomic_store(&s->done, 1);
    up_conn_lent_return(ex->conn); /* the loop's again: not touched after this */
    return NULL;
}

/* Stops a stream thread that outlived its test's deadline, then joins it. */
static void stream_join(stream_t *s)
{
    if (!s->started)
        return;
    if (!atomic_load(&s->done)) {
        s->cancel = 1;
        up_conn_any_cancel_waits(s->ex->conn); /* a lent connection is never freed */
    }
    pthread_join(s->thread, NULL);
    s->started = 0;
}

/* ---- a protocol to switch to: echoes every byte */

static void echo_on_read(up_conn_t *conn)
{
    size_t n = conn->_rbuf.len - conn->_rpos;
    if (n > 0) {
        up_outq_append(&conn->_staged, &conn->server->pool, conn->_rbuf.base + conn->_rpos, n);
        app.echoed += n;
    }
    conn->_rpos += n; /* consumed (protocol.h); the buffer is the connection's */
    if (conn->eof) {
        up_conn_loop_close_after_output(conn);
        return;
    }
    up_conn_loop_want_read(conn, 1);
}

static void echo_on_nothing(up_conn_t *conn)
{
    (void)conn;
}

static void echo_on_close(up_conn_t *conn)
{
    (void)conn;
    app.echo_closes++;
}

static const up_protocol_t echo_protocol = {
    .name = "echo",
    .on_read = echo_on_read,
    .on_start = echo_on_nothing,
    .on_drained = echo_on_nothing,
    .on_resume = echo_on_nothing,
    .on_timeout = up_conn_loop_close,
    .on_stop = up_conn_loop_close,
    .on_close_request = up_conn_loop_close,
    .on_notify = echo_on_nothing,
    .on_close = echo_on_close,
};

static int path_is(const up_exchange_t *ex, const char *path)
{
    return up_slice_eq(ex->req->head.path, path, strlen(path));
}

static up_request_result_t app_on_request(up_exchange_t *ex, void *user)
{
    app_t *a = user;
    const up_http1_request_t *req = &ex->req->head;
    const up_request_body_t *body = &ex->req->body;
    char desc[128];
    char body_text[40] = "";
    if (body->mem != NULL)
        snprintf(body_text, sizeof(body_text), "%.*s", (int)body->len, body->mem);
    else if (body->fd >= 0)
        snprintf(body_text, sizeof(body_text), "<%llu bytes spooled>",
                 (unsigned long long)body->len);
    int n = snprintf(desc, sizeof(desc), "%.*s %.*s body=%s", (int)req->method.len,
                     req->method.base, (int)req->target.len, req->target.base, body_text);
    if (a->calls < 16)
        memcpy(a->seen[a->calls], desc, (size_t)n + 1);
    a->calls++;

    if (path_is(ex, "/stream") && a->stream != NULL && !a->stream->started) {
        a->stream->ex = ex;
        a->stream->started = 1;
        pthread_create(&a->stream->thread, NULL, stream_run, a->stream);
        return UP_REQUEST_DEFERRED;
    }
    if (path_is(ex, "/lend")) {
        a->lent = ex;
        return UP_REQUEST_DEFERRED;
    }
    if (path_is(ex, "/close-now")) {
        up_conn_loop_close(ex->conn);
        return UP_REQUEST_DONE;
    }
    if (path_is(ex, "/echo")) {
        up_response_start(ex, 101);
        up_response_add_header(ex, "upgrade", 7, "echo", 4);
        up_response_add_header(ex, "connection", 10, "upgrade", 7);
        up_response_end_head(ex, -1);
        up_http1_switch_protocol(ex, &echo_protocol, NULL);
        return UP_REQUEST_DONE;
    }
    up_response_start(ex, 200);
    up_response_add_header(ex, "content-type", 12, "text/plain", 10);
    if (a->big_body > 0) {
        char *big = malloc(a->big_body);
        harness_pattern(big, a->big_body, 0);
        up_response_end_head(ex, (int64_t)a->big_body);
        up_response_write(ex, big, a->big_body);
        free(big);
    } else {
        up_response_end_head(ex, n);
        up_response_write(ex, desc, (size_t)n);
    }
    up_response_finish(ex);
    return UP_REQUEST_DONE;
}

static void start(harness_t *h, const up_server_config_t *cfg)
{
    memset(&app, 0, sizeof(app));
    up_server_handler_t handler = {.on_request = app_on_request, .user = &app};
    harness_start(h, cfg, &handler);
}

static int no_conns(void *arg)
{
    return up_server_num_conns(((harness_t *)arg)->server) == 0;
}

/* ---------------------------------------------------------------- addresses */

static void test_accepts_a_socket_without_an_ip_address(void)
{
    static const struct {
        const char *name;
        int family; /* 0: no address at all */
        const char *ip;
        unsigned port;
        int bracket;
        const char *host;
    } cases[] = {
        {"no address", 0, NULL, 0, 1, ""},
        {"a Unix socket", AF_UNIX, NULL, 0, 1, ""},
        {"IPv4", AF_INET, "127.0.0.1", 8080, 1, "127.0.0.1"},
        {"IPv6 bracketed", AF_INET6, "::1", 443, 1, "[::1]"},
        {"IPv6 bare", AF_INET6, "2001:db8::7", 1, 0, "2001:db8::7"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct sockaddr_storage ss = {0};
        ss.ss_family = (sa_family_t)cases[i].family;
        if (cases[i].family == AF_INET) {
            struct sockaddr_in *in = (struct sockaddr_in *)&ss;
            inet_pton(AF_INET, cases[i].ip, &in->sin_addr);
            in->sin_port = htons((uint16_t)cases[i].port);
        } else if (cases[i].family == AF_INET6) {
            struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
            inet_pton(AF_INET6, cases[i].ip, &in6->sin6_addr);
            in6->sin6_port = htons((uint16_t)cases[i].port);
        } else if (cases[i].family == AF_UNIX) {
            snprintf(((struct sockaddr_un *)&ss)->sun_path, 16, "/tmp/up.sock");
        }
        const struct sockaddr *addr = cases[i].family == 0 ? NULL : (struct sockaddr *)&ss;
        char host[64] = "junk";
        unsigned port = 12345;
        up_format_address(addr, host, sizeof(host), &port, cases[i].bracket);
        CHECK(strcmp(host, cases[i].host) == 0 && port == cases[i].port,
              "format %s: \"%s\" port %u", cases[i].name, host, port);
    }

    /* A Unix-socket address goes through up_conn_loop_accept as "no IP". */
    harness_t h;
    start(&h, NULL);
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv);
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    up_conn_t *conn =
        up_conn_loop_accept(h.server, NULL, &up_http1_protocol, sv[0], (struct sockaddr *)&sun);
    CHECK(conn->remote_addr[0] == '\0' && conn->listener == NULL,
          "a Unix-socket connection has no remote address: \"%s\"", conn->remote_addr);
    CHECK(up_server_num_conns(h.server) == 1, "connection counted");
    close(sv[1]);
    CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS),
          "a client that leaves without a byte is closed");
    harness_stop(&h);
}

/* ---------------------------------------------------------------- requests, whole and in bytes */

typedef struct request_case_t {
    const char *name;
    const char *request;
    const char *seen; /* what the handler must see */
    int closes;       /* the connection must close after the response */
} request_case_t;

#define HOST "Host: t\r\n"

static const request_case_t request_cases[] = {
    {"GET", "GET /a HTTP/1.1\r\n" HOST "\r\n", "GET /a body=", 0},
    {"GET with a query", "GET /q?x=1&y=2 HTTP/1.1\r\n" HOST "\r\n", "GET /q?x=1&y=2 body=", 0},
    {"POST with content-length", "POST /b HTTP/1.1\r\n" HOST "Content-Length: 5\r\n\r\nhello",
     "POST /b body=hello", 0},
    {"POST chunked",
     "POST /c HTTP/1.1\r\n" HOST
     "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
     "POST /c body=hello world", 0},
    {"HTTP/1.0 closes after the response", "GET /old HTTP/1.0\r\n\r\n", "GET /old body=", 1},
    {"Connection: close closes after the response",
     "GET /bye HTTP/1.1\r\n" HOST "Connection: close\r\n\r\n", "GET /bye body=", 1},
    {"leading empty lines are skipped", "\r\n\r\nGET /e HTTP/1.1\r\n" HOST "\r\n",
     "GET /e body=", 0},
};

static void run_request_case(const request_case_t *rc, int byte_by_byte)
{
    const char *how = byte_by_byte ? "byte by byte" : "whole";
    harness_t h;
    start(&h, NULL);
    client_t c;
    size_t len = strlen(rc->request);
    if (byte_by_byte) {
        client_open(&h, &c, NULL, 0);
        int early_calls = 0;
        for (size_t i = 0; i < len; i++) {
            client_send(&h, &c, rc->request + i, 1);
            harness_turn(&h, 0);
            if (i + 1 < len && app.calls > 0)
                early_calls++;
        }
        CHECK(early_calls == 0, "%s (%s): the handler ran before the request was complete",
              rc->name, how);
    } else {
        client_open(&h, &c, rc->request, 0);
    }
    response_t res;
    int got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
    CHECK(got && res.status == 200 && strcmp(res.body, rc->seen) == 0,
          "%s (%s): response %d \"%.80s\"", rc->name, how, res.status, got ? res.body : "");
    CHECK(app.calls == 1 && strcmp(app.seen[0], rc->seen) == 0, "%s (%s): handler saw %d: %.80s",
          rc->name, how, app.calls, app.seen[0]);
    CHECK(got && res.has_date && res.close == rc->closes, "%s (%s): date %d, close %d", rc->name,
          how, res.has_date, res.close);
    if (rc->closes) {
        CHECK(client_wait_eof(&h, &c, HARNESS_TIMEOUT_MS), "%s (%s): connection closed", rc->name,
              how);
        client_close(&c);
        CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS), "%s (%s): server side gone",
              rc->name, how);
    } else {
        harness_turn(&h, 0);
        client_read_some(&c, SIZE_MAX);
        CHECK(!c.eof && up_server_num_conns(h.server) == 1 && c.pos == c.len,
              "%s (%s): kept alive, nothing more sent", rc->name, how);
    }
    response_free(&res);
    harness_stop(&h);
    client_close(&c);
}

static void test_requests_whole_and_byte_by_byte(void)
{
    for (size_t i = 0; i < sizeof(request_cases) / sizeof(request_cases[0]); i++) {
        run_request_case(&request_cases[i], 0);
        run_request_case(&request_cases[i], 1);
    }
}

static void test_keep_alive_answers_requests_in_turn(void)
{
    harness_t h;
    start(&h, NULL);
    client_t c;
    client_open(&h, &c, NULL, 0);
    const char *paths[] = {"/one", "/two", "/three"};
    for (int i = 0; i < 3; i++) {
        char req[64], expect[64];
        snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\n" HOST "\r\n", paths[i]);
        snprintf(expect, sizeof(expect), "GET %s body=", paths[i]);
        client_send_str(&h, &c, req);
        response_t res;
        int got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
        CHECK(got && strcmp(res.body, expect) == 0, "request %d on one connection: %.80s", i,
              got ? res.body : "(none)");
        response_free(&res);
    }
    CHECK(app.calls == 3 && up_server_num_conns(h.server) == 1 && !c.eof,
          "three requests, one connection still open");
    harness_stop(&h);
    client_close(&c);
}

static void test_pipelined_requests_answered_in_order(void)
{
    harness_t h;
    start(&h, NULL);
    client_t c;
    client_open(&h, &c,
                "GET /1 HTTP/1.1\r\n" HOST "\r\n"
                "POST /2 HTTP/1.1\r\n" HOST "Content-Length: 3\r\n\r\nabc"
                "POST /3 HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\n\r\n2\r\nde\r\n0\r\n\r\n"
                "GET /4 HTTP/1.1\r\n" HOST "\r\n",
                0);
    const char *expect[] = {"GET /1 body=", "POST /2 body=abc", "POST /3 body=de", "GET /4 body="};
    for (int i = 0; i < 4; i++) {
        response_t res;
        int got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
        CHECK(got && strcmp(res.body, expect[i]) == 0, "pipelined response %d: %.80s", i,
              got ? res.body : "(none)");
        response_free(&res);
    }
    CHECK(app.calls == 4, "four requests handled: %d", app.calls);
    /* All four responses went out in one write: they were queued together. */
    harness_stop(&h);
    client_close(&c);
}

static void test_expect_continue_is_answered_before_the_body(void)
{
    harness_t h;
    start(&h, NULL);
    client_t c;
    client_open(&h, &c,
                "PUT /up HTTP/1.1\r\n" HOST "Expect: 100-continue\r\nContent-Length: 4\r\n\r\n", 0);
    response_t res;
    int got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
    CHECK(got && strcmp(res.raw, "HTTP/1.1 100 Continue\r\n\r\n") == 0 && app.calls == 0,
          "100 Continue before the body: %.80s", got ? res.raw : "(none)");
    response_free(&res);
    client_send_str(&h, &c, "data");
    got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
    CHECK(got && strcmp(res.body, "PUT /up body=data") == 0, "then the response: %.80s",
          got ? res.body : "(none)");
    response_free(&res);
    harness_stop(&h);
    client_close(&c);
}

static void test_handler_may_close_the_connection(void)
{
    harness_t h;
    start(&h, NULL);
    client_t c;
    client_open(&h, &c,
                "GET /close-now HTTP/1.1\r\n" HOST "\r\nGET /never HTTP/1.1\r\n" HOST "\r\n", 0);
    CHECK(client_wait_eof(&h, &c, HARNESS_TIMEOUT_MS) && c.len == 0,
          "closed without a response: %zu bytes", c.len);
    CHECK(app.calls == 1 && harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS),
          "the pipelined request is dropped with the connection");
    harness_stop(&h);
    client_close(&c);
}

/* ---------------------------------------------------------------- rejections */

typedef struct bad_case_t {
    const char *name;
    const char *request;
    int status;
    int answered; /* good responses before the rejection */
} bad_case_t;

#define TEN "0123456789"

static const bad_case_t bad_cases[] = {
    {"space before the colon (§5.1)", "GET / HTTP/1.1\r\nHost : t\r\n\r\n", 400, 0},
    {"obs-fold (§5.2)", "GET / HTTP/1.1\r\n" HOST "X: a\r\n b\r\n\r\n", 400, 0},
    {"bare LF in a field", "GET / HTTP/1.1\r\nHost: t\nX: y\r\n\r\n", 400, 0},
    {"HTTP/2.0 request line", "GET / HTTP/2.0\r\n" HOST "\r\n", 505, 0},
    {"content-length and chunked (§6.3)",
     "POST / HTTP/1.1\r\n" HOST "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
     400, 0},
    {"two content-lengths",
     "POST / HTTP/1.1\r\n" HOST "Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", 400, 0},
    {"bad chunk size (§7.1)", "POST / HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\n\r\nzz\r\n",
     400, 0},
    {"head over max_head_size",
     "GET / HTTP/1.1\r\n" HOST "X: " TEN TEN TEN TEN TEN TEN TEN TEN TEN TEN TEN TEN TEN TEN
     "\r\n\r\n",
     431, 0},
    {"more fields than max_headers",
     "GET / HTTP/1.1\r\n" HOST "A: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\nE: 5\r\n\r\n", 431, 0},
    {"body over max_body_size", "POST / HTTP/1.1\r\n" HOST "Content-Length: 1000\r\n\r\n", 413, 0},
    {"chunked body over max_body_size",
     "POST / HTTP/1.1\r\n" HOST "Transfer-Encoding: chunked\r\n\r\n40\r\n", 413, 0},
    {"a good request, then a bad one",
     "GET /ok HTTP/1.1\r\n" HOST "\r\nGET / HTTP/1.1\r\nHost : t\r\n\r\n", 400, 1},
};

static void run_bad_case(const bad_case_t *bc, int byte_by_byte)
{
    const char *how = byte_by_byte ? "byte by byte" : "whole";
    up_server_config_t cfg;
    up_server_config_defaults(&cfg);
    cfg.max_head_size = 150;
    cfg.max_headers = 5;
    cfg.max_body_size = 32;
    harness_t h;
    start(&h, &cfg);
    client_t c;
    if (byte_by_byte) {
        client_open(&h, &c, NULL, 0);
        size_t len = strlen(bc->request);
        /* Once rejected, the server may stop reading: a failed send just ends the sending. */
        for (size_t i = 0; i < len && client_send(&h, &c, bc->request + i, 1) == 0; i++)
            harness_turn(&h, 0);
    } else {
        client_open(&h, &c, bc->request, 0);
    }
    for (int i = 0; i < bc->answered; i++) {
        response_t res;
        int got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
        CHECK(got && res.status == 200, "%s (%s): good response %d first", bc->name, how, i);
        response_free(&res);
    }
    response_t res;
    int got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
    CHECK(got && res.status == bc->status, "%s (%s): status %d, expected %d", bc->name, how,
          got ? res.status : 0, bc->status);
    CHECK(got && res.close && res.body_len > 1 &&
              strstr(res.raw, "content-type: text/plain") != NULL,
          "%s (%s): a text body and connection: close: %.80s", bc->name, how, got ? res.raw : "");
    CHECK(app.calls == bc->answered, "%s (%s): handler ran %d times", bc->name, how, app.calls);
    CHECK(client_wait_eof(&h, &c, HARNESS_TIMEOUT_MS) && c.len == c.pos,
          "%s (%s): closed right after the response (%zu stray bytes)", bc->name, how,
          c.len - c.pos);
    response_free(&res);
    client_close(&c);
    CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS), "%s (%s): server side gone", bc->name,
          how);
    harness_stop(&h);
}

static void test_bad_requests_get_an_error_and_the_close(void)
{
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        run_bad_case(&bad_cases[i], 0);
        run_bad_case(&bad_cases[i], 1);
    }
}

/* ---------------------------------------------------------------- lingering close */

/* After an error response the server reads and drops what the client still sends (a lingering
 * close); a client that keeps sending fast gets a bounded amount read per event, so the
 * others are served meanwhile, and is closed once it has sent UP_LINGER_MAX_BYTES, long
 * before the linger timeout. */
static void test_lingering_close_is_bounded_per_event_and_in_all(void)
{
    harness_t h;
    start(&h, NULL);
    client_t flood, other;
    client_open(&h, &flood, "GET / HTTP/1.1\r\nHost : t\r\n\r\n", 0);
    response_t res;
    CHECK(client_read_response(&h, &flood, &res, 0, HARNESS_TIMEOUT_MS) && res.status == 400,
          "the flooder gets its 400");
    response_free(&res);
    CHECK(up_conn_any_state(flood.conn) == UP_CONN_LINGERING, "lingering after the 400");
    int sndbuf = 256 * 1024; /* doubled by the kernel: room for several events, not megabytes */
    setsockopt(flood.fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    static char junk[65536];
    size_t sent = 0;
    ssize_t n;
    while ((n = send(flood.fd, junk, sizeof(junk), MSG_NOSIGNAL)) > 0)
        sent += (size_t)n;
    int server_fd = flood.conn->_watcher.fd, before = 0, after = 0;
    ioctl(server_fd, FIONREAD, &before);
    CHECK(before > UP_LINGER_MAX_READ_PER_EVENT, "%d bytes waiting: the socket holds too little",
          before);

    client_open(&h, &other, NULL, 0);
    CHECK(client_send_str(&h, &other, "GET /other HTTP/1.1\r\n" HOST "\r\n") == 0, "request");
    harness_turn(&h, 0);
    ioctl(server_fd, FIONREAD, &after);
    CHECK(before - after > 0 && before - after <= UP_LINGER_MAX_READ_PER_EVENT,
          "one event dropped %d bytes of the flood", before - after);
    CHECK(client_read_response(&h, &other, &res, 0, HARNESS_TIMEOUT_MS) && res.status == 200,
          "the other client is answered");
    response_free(&res);

    /* Bounded by bytes, not only by the timer: the flooder is closed after about
     * UP_LINGER_MAX_BYTES plus what the socket buffers hold, where an unbounded drain would
     * take 8 MiB (and more, until the 2 s timer) without a close. */
    int closed = 0;
    uint64_t deadline = harness_now_ms() + HARNESS_TIMEOUT_MS;
    while (sent < 8 << 20 && harness_now_ms() < deadline) {
        n = send(flood.fd, junk, sizeof(junk), MSG_NOSIGNAL);
        if (n > 0) {
            sent += (size_t)n;
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
            closed = 1;
            break;
        } else {
            harness_turn(&h, 0);
        }
    }
    CHECK(closed, "the flooder is still open after sending %zu bytes", sent);
    CHECK(sent >= UP_LINGER_MAX_BYTES, "closed after only %zu bytes", sent);
    CHECK(up_server_num_conns(h.server) == 1, "the other client stays");
    client_close(&flood);
    client_close(&other);
    harness_stop(&h);
}

/* ---------------------------------------------------------------- the pipeline limit */

static void test_pipeline_limit_holds_back_parsing(void)
{
    enum { REQUESTS = 8, BODY = 65536, LIMIT = 2 };
    up_server_config_t cfg;
    up_server_config_defaults(&cfg);
    cfg.max_pipeline = LIMIT;
    harness_t h;
    start(&h, &cfg);
    app.big_body = BODY;
    client_t c;
    char reqs[REQUESTS * 40] = "";
    for (int i = 0; i < REQUESTS; i++)
        snprintf(reqs + strlen(reqs), sizeof(reqs) - strlen(reqs),
                 "GET /%d HTTP/1.1\r\n" HOST "\r\n", i);
    client_open(&h, &c, reqs, 4096);
    /* The client reads nothing: the first responses fill the socket, and no more are made. */
    for (int i = 0; i < 50; i++)
        harness_turn(&h, 1);
    CHECK(app.calls == LIMIT, "%d requests handled while the client reads nothing, limit %d",
          app.calls, LIMIT);

    /* Reading lets the rest through, all in order. */
    response_t res;
    int in_order = 0;
    for (int i = 0; i < REQUESTS; i++) {
        if (!client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS))
            break;
        char expect[BODY];
        harness_pattern(expect, BODY, 0);
        if (res.body_len == BODY && memcmp(res.body, expect, BODY) == 0)
            in_order++;
        response_free(&res);
    }
    CHECK(in_order == REQUESTS && app.calls == REQUESTS, "%d of %d responses whole, %d handled",
          in_order, REQUESTS, app.calls);
    for (int i = 0; i < REQUESTS && i < 16; i++) {
        char expect[32];
        snprintf(expect, sizeof(expect), "GET /%d body=", i);
        CHECK(strcmp(app.seen[i], expect) == 0, "request %d seen as %.80s", i, app.seen[i]);
    }
    harness_stop(&h);
    client_close(&c);
}

/* A client that pipelines without reading must not make the server buffer its requests without
 * bound (http1.h): parsing stops at max_pipeline, and reading with it. (Found by this test:
 * reading went on, and _rbuf doubled whenever it was full.) */
static void test_pipelining_client_cannot_grow_the_read_buffer(void)
{
    up_server_config_t cfg;
    up_server_config_defaults(&cfg);
    cfg.max_pipeline = 2;
    harness_t h;
    start(&h, &cfg);
    app.big_body = 65536;
    client_t c;
    client_open(&h, &c, NULL, 4096);
    int bufsize = 65536;
    setsockopt(c.fd, SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize));

    static char block[65536];
    size_t fill = 0;
    while (fill + 32 < sizeof(block))
        fill +=
            (size_t)snprintf(block + fill, sizeof(block) - fill, "GET /x HTTP/1.1\r\n" HOST "\r\n");
    size_t accepted = 0;
    int stuck = 0;
    while (accepted < 16u * 1024 * 1024 && stuck < 50) {
        ssize_t n = send(c.fd, block, fill, MSG_NOSIGNAL);
        if (n > 0) {
            accepted += (size_t)n;
            stuck = 0;
        } else {
            stuck++;
        }
        harness_turn(&h, 1);
    }
    size_t rbuf = up_server_num_conns(h.server) == 1 ? c.conn->_rbuf.cap : 0;
    CHECK(accepted < 2u * 1024 * 1024, "the server took %zu bytes of requests it cannot answer yet",
          accepted);
    CHECK(rbuf <= 256u * 1024, "its read buffer grew to %zu bytes", rbuf);
    CHECK(app.calls == 2, "%d requests handled", app.calls);
    harness_stop(&h);
    client_close(&c);
}

/* ---------------------------------------------------------------- lent exchanges */

/* The last chunk has come; arg is how far earlier calls looked. Only "\r\n0\r\n\r\n" ends a
 * chunked body: the pattern has no CR or LF. */
static int stream_response_in(client_t *c, void *arg)
{
    size_t *from = arg;
    if (c->len > *from && memmem(c->in + *from, c->len - *from, "\r\n0\r\n\r\n", 7) != NULL)
        return 1;
    if (c->len > 7)
        *from = c->len - 7;
    return c->eof;
}

static void test_lent_exchange_streams_under_back_pressure(void)
{
    enum { TOTAL = 1024 * 1024, PART = 16384, LIMIT = 65536 };
    harness_t h;
    start(&h, NULL);
    stream_t s = {.total = TOTAL, .part = PART, .limit = LIMIT};
    app.stream = &s;
    client_t c;
    /* The next request is already there: it must wait for the lent one. */
    client_open(&h, &c, "GET /stream HTTP/1.1\r\n" HOST "\r\nGET /after HTTP/1.1\r\n" HOST "\r\n",
                8192);
    /* A slow reader: 4 KB a turn. */
    size_t scanned = 0;
    int complete = client_wait(&h, &c, 4096, stream_response_in, &scanned, 4 * HARNESS_TIMEOUT_MS);
    CHECK(complete, "the streamed response ended (%zu bytes in, thread sent %zu)", c.len, s.sent);
    CHECK(harness_wait(&h, no_conns, &h, 0) == 0, "connection still open");

    response_t res;
    int got = complete && client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
    static char expect[TOTAL];
    harness_pattern(expect, TOTAL, 0);
    CHECK(got && res.status == 200 && res.chunked && res.body_len == TOTAL &&
              memcmp(res.body, expect, TOTAL) == 0,
          "every byte arrived in order: %zu of %d", got ? res.body_len : 0, TOTAL);
    if (got)
        response_free(&res);

    /* The exchange was given back: the connection goes on with the next request. */
    got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
    CHECK(got && strcmp(res.body, "GET /after body=") == 0 && app.calls == 2,
          "the pipelined request is answered after the resume: %.80s", got ? res.body : "(none)");
    if (got)
        response_free(&res);
    stream_join(&s);
    CHECK(s.waits > 0 && s.wait_failures == 0 && s.send_failures == 0 && s.write_error == 0,
          "the thread waited %d times, %d failed, %d sends failed, write error %d", s.waits,
          s.wait_failures, s.send_failures, s.write_error);
    CHECK(s.max_backlog <= LIMIT + PART + 64, "backlog peaked at %llu, limit %d",
          (unsigned long long)s.max_backlog, LIMIT);
    CHECK(!s.broken_seen, "the thread never saw the connection broken");
    harness_stop(&h);
    client_close(&c);
}

static void test_lent_exchange_given_back_with_its_whole_response(void)
{
    harness_t h;
    start(&h, NULL);
    stream_t s = {.total = 3000, .part = 1000, .limit = 1 << 20, .stage_only = 1};
    app.stream = &s;
    client_t c;
    client_open(&h, &c, "GET /stream HTTP/1.1\r\n" HOST "\r\n", 0);
    response_t res;
    int got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
    char expect[3000];
    harness_pattern(expect, sizeof(expect), 0);
    CHECK(got && res.body_len == 3000 && memcmp(res.body, expect, 3000) == 0,
          "what the thread staged goes out when it gives the exchange back");
    if (got)
        response_free(&res);
    stream_join(&s);
    client_send_str(&h, &c, "GET /next HTTP/1.1\r\n" HOST "\r\n");
    got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
    CHECK(got && strcmp(res.body, "GET /next body=") == 0, "then the next request");
    if (got)
        response_free(&res);
    harness_stop(&h);
    client_close(&c);
}

/* The thread waits for a backlog over its limit. Only the loop's turns drain the backlog, and
 * they run on the test's thread: checked between turns, this holds until the next one, so a
 * hang-up now leaves the thread no way out of the wait but the break. (A waiting flag alone
 * let a turn end the wait just before the hang-up, as the socket took the last bytes it had
 * room for: the thread then found the break on its next send, not in its wait.) */
static int stream_stuck(void *arg)
{
    stream_t *s = arg;
    return atomic_load(&s->waiting_now) && up_conn_any_backlog(s->ex->conn) > s->limit;
}

static int stream_at_hold(void *arg)
{
    return atomic_load(&((stream_t *)arg)->at_hold);
}

static int lent_seen(void *arg)
{
    return ((app_t *)arg)->lent != NULL;
}

/* A thread that posts output for a connection broken meanwhile (here a forced close while the
 * exchange is lent) may still put it first on the mail list: the loop must then be told, or
 * every connection posted after it waits for some other wake-up. */
static void test_post_to_a_broken_connection_still_asks_for_the_wake_up(void)
{
    harness_t h;
    start(&h, NULL);
    client_t c;
    client_open(&h, &c, "GET /lend HTTP/1.1\r\n" HOST "\r\n", 0);
    CHECK(harness_wait(&h, lent_seen, &app, HARNESS_TIMEOUT_MS), "the exchange is lent");
    up_exchange_t *ex = app.lent;
    up_conn_t *conn = ex->conn;
    up_server_close_all(h.server);
    CHECK(up_conn_any_broken(conn), "a close while lent breaks the exchange");
    up_response_start(ex, 200);
    up_response_end_head(ex, 0);
    up_response_finish(ex);
    int wake = up_conn_lent_post(conn);
    CHECK(wake == 1, "the first post on an empty list asks for the wake-up: %d", wake);
    if (wake > 0)
        up_loop_wake(h.loop);
    up_conn_lent_return(conn);
    up_loop_wake(h.loop);
    CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS), "closed once given back");
    app.lent = NULL;
    harness_stop(&h);
    client_close(&c);
}

static void test_client_leaving_while_lent_breaks_the_exchange(void)
{
    harness_t h;
    start(&h, NULL);
    stream_t s = {.total = 4 * 1024 * 1024, .part = 16384, .limit = 32768, .hold = 1};
    app.stream = &s;
    client_t c;
    client_open(&h, &c, "GET /stream HTTP/1.1\r\n" HOST "\r\n", 8192);
    CHECK(harness_wait(&h, stream_stuck, &s, HARNESS_TIMEOUT_MS),
          "the thread waits for the unread backlog");
    client_hang_up(&c);
    int held = harness_wait(&h, stream_at_hold, &s, HARNESS_TIMEOUT_MS);
    CHECK(held, "the thread stopped producing once the client left");
    CHECK(s.broken_seen && s.wait_failures == 1,
          "it saw conn->broken (%d) and the wait failed (%d)", s.broken_seen, s.wait_failures);
    CHECK(s.sent < s.total, "it stopped early: %zu of %zu", s.sent, s.total);
    /* Lent: broken, but neither closed nor freed until given back. */
    for (int i = 0; i < 20; i++)
        harness_turn(&h, 1);
    CHECK(up_server_num_conns(h.server) == 1, "the lent connection stays until it is given back");
    atomic_store(&s.go, 1);
    CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS), "closed once given back");
    stream_join(&s);
    harness_stop(&h);
    client_close(&c);
}

/* ---------------------------------------------------------------- timeouts */

static void test_idle_and_slow_connections_time_out(void)
{
    up_server_config_t cfg;
    up_server_config_defaults(&cfg);
    cfg.keepalive_timeout_ms = 1000;
    cfg.head_timeout_ms = 1000;
    cfg.body_timeout_ms = 1000;
    harness_t h;
    start(&h, &cfg);
    enum { IDLE_AFTER_RESPONSE, SLOW_HEAD, SLOW_BODY, NUM };
    static const char *names[NUM] = {"idle after a response", "a head that never ends",
                                     "a body that never ends"};
    client_t c[NUM];
    client_open(&h, &c[IDLE_AFTER_RESPONSE], "GET / HTTP/1.1\r\n" HOST "\r\n", 0);
    client_open(&h, &c[SLOW_HEAD], "GET / HTTP/1.1\r\n" HOST "X-Slow: ", 0);
    client_open(&h, &c[SLOW_BODY], "POST / HTTP/1.1\r\n" HOST "Content-Length: 10\r\n\r\nabc", 0);
    /* The timers are checked on the loop's one-second tick: each closes in one to two seconds. */
    uint64_t deadline = harness_now_ms() + HARNESS_TIMEOUT_MS;
    for (int left = NUM; left > 0 && harness_now_ms() < deadline;) {
        harness_turn(&h, 5);
        left = 0;
        for (int i = 0; i < NUM; i++) {
            client_read_some(&c[i], SIZE_MAX);
            left += !c[i].eof;
        }
    }
    for (int i = 0; i < NUM; i++)
        CHECK(c[i].eof, "%s: closed within %d ms", names[i], HARNESS_TIMEOUT_MS);

    response_t res;
    client_t *idle = &c[IDLE_AFTER_RESPONSE];
    long taken = response_parse(idle->in, idle->len, 1, 0, &res);
    CHECK(taken > 0 && res.status == 200 && (size_t)taken == idle->len,
          "idle: its response, then nothing but the close");
    if (taken > 0)
        response_free(&res);
    for (int i = SLOW_HEAD; i <= SLOW_BODY; i++) {
        int got = response_parse(c[i].in, c[i].len, 1, 0, &res) > 0;
        CHECK(got && res.status == 408 && res.close && res.body_len > 1,
              "%s: 408 with a body: %.80s", names[i], got ? res.raw : (c[i].in ? c[i].in : ""));
        if (got)
            response_free(&res);
    }
    CHECK(app.calls == 1, "only the complete request was handled");
    for (int i = 0; i < NUM; i++)
        client_close(&c[i]);
    CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS), "all closed on the server");
    harness_stop(&h);
}

/* A connection that never sends a byte is closed by the keep-alive timer. (Found by this test:
 * http1 armed it only after a first read, so such a connection had no timer at all.) */
static void test_silent_connection_times_out(void)
{
    up_server_config_t cfg;
    up_server_config_defaults(&cfg);
    cfg.keepalive_timeout_ms = 1000;
    cfg.head_timeout_ms = 1000;
    harness_t h;
    start(&h, &cfg);
    client_t c;
    client_open(&h, &c, NULL, 0);
    CHECK(client_wait_eof(&h, &c, HARNESS_TIMEOUT_MS) && c.len == 0,
          "a client that never sends is closed within %d ms, without a response",
          HARNESS_TIMEOUT_MS);
    harness_stop(&h);
    client_close(&c);
}

/* ---------------------------------------------------------------- protocol switch */

static int echoed(client_t *c, void *arg)
{
    return c->len - c->pos >= strlen(arg);
}

/* The handler answers 101 and asks HTTP/1 to switch once the response is done
 * (up_http1_switch_protocol): the new protocol gets exactly the bytes after the request, even
 * those that came in the same write, and HTTP/1 lets go of its state. (Found by this test: a
 * switch from inside the handler echoed the request head, HTTP/1 went on parsing the new
 * protocol's bytes as requests, leaked its headers buffer, and a protocol that emptied _rbuf
 * made HTTP/1 read out of bounds.) */
static void test_switch_to_another_protocol_after_a_response(void)
{
    harness_t h;
    start(&h, NULL);
    client_t c;
    /* Bytes for the new protocol come in the same write as the request. */
    client_open(&h, &c,
                "GET /echo HTTP/1.1\r\n" HOST "Upgrade: echo\r\nConnection: upgrade\r\n\r\nhello",
                0);
    response_t res;
    int got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
    CHECK(got && res.status == 101 &&
              strcmp(res.raw, "HTTP/1.1 101 Switching Protocols\r\nupgrade: echo\r\nconnection: "
                              "upgrade\r\n\r\n") == 0,
          "101 first: %.80s", got ? res.raw : "(none)");
    if (got)
        response_free(&res);
    CHECK(client_wait(&h, &c, SIZE_MAX, echoed, "hello", HARNESS_TIMEOUT_MS) &&
              c.len - c.pos == 5 && memcmp(c.in + c.pos, "hello", 5) == 0,
          "the bytes after the request were echoed: \"%.80s\"", c.in ? c.in + c.pos : "");
    c.pos = c.len;
    client_send_str(&h, &c, "more bytes");
    CHECK(client_wait(&h, &c, SIZE_MAX, echoed, "more bytes", HARNESS_TIMEOUT_MS) &&
              strcmp(c.in + c.pos, "more bytes") == 0,
          "later bytes echoed: \"%.80s\"", c.in ? c.in + c.pos : "");
    CHECK(app.echoed == 15, "the new protocol got the 15 bytes meant for it: %zu", app.echoed);
    c.pos = c.len;
    for (int i = 0; i < 10; i++)
        client_pump(&h, &c, SIZE_MAX);
    CHECK(c.len == c.pos && !c.eof && app.calls == 1,
          "no HTTP response after the switch: \"%.80s\", %d calls", c.in ? c.in + c.pos : "",
          app.calls);
    shutdown(c.fd, SHUT_WR);
    CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS),
          "the echo protocol closes at the end");
    CHECK(app.echo_closes == 1, "its on_close ran once: %d", app.echo_closes);
    harness_stop(&h);
    client_close(&c);
}

/* ---------------------------------------------------------------- graceful stop */

/* What a binding reads for SERVER_NAME/SERVER_PORT when a request has no Host. */
static char seen_host[64], seen_port[8];

static up_request_result_t address_on_request(up_exchange_t *ex, void *user)
{
    (void)user;
    if (ex->conn->listener != NULL) {
        snprintf(seen_host, sizeof(seen_host), "%s", ex->conn->listener->host);
        snprintf(seen_port, sizeof(seen_port), "%s", ex->conn->listener->port);
    }
    up_response_send_simple(ex, 200, "ok", 0);
    return UP_REQUEST_DONE;
}

static int one_conn(void *arg)
{
    return up_server_num_conns(((harness_t *)arg)->server) == 1;
}

/* A graceful stop closes the listeners at once while connections go on serving: a request
 * whose head completes after the stop still reads its listener's address (under ASan, a
 * listener freed at the stop is a heap-use-after-free here). */
static void test_listener_address_outlives_a_graceful_stop(void)
{
    harness_t h;
    up_server_handler_t handler = {.on_request = address_on_request};
    harness_start(&h, NULL, &handler);
    const char *err = NULL;
    CHECK(up_server_listen(h.server, "127.0.0.1", "0", &err) == 0, "listen: %s", err);
    char port[8];
    snprintf(port, sizeof(port), "%s", h.server->listeners->port);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
    inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    client_t c = {.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)};
    CHECK(connect(c.fd, (struct sockaddr *)&addr, sizeof(addr)) == 0, "connect");
    fcntl(c.fd, F_SETFL, O_NONBLOCK);
    /* Part of a head: the listener defers the accept until bytes come. */
    CHECK(client_send_str(&h, &c, "GET / HTTP/1.0\r\n") == 0, "first half");
    CHECK(harness_wait(&h, one_conn, &h, HARNESS_TIMEOUT_MS), "accepted");

    up_server_stop(h.server);
    for (int i = 0; i < 3; i++)
        harness_turn(&h, 0); /* the backend lets go of the listeners */
    CHECK(h.server->listeners == NULL, "the stop closed the listeners");
    CHECK(client_send_str(&h, &c, "\r\n") == 0, "second half");
    response_t res;
    CHECK(client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS), "answered after the stop");
    CHECK(res.status == 200 && res.close, "200 and a close: %d", res.status);
    response_free(&res);
    CHECK(strcmp(seen_host, "127.0.0.1") == 0 && strcmp(seen_port, port) == 0,
          "the listener's address after the stop: \"%s\" \"%s\"", seen_host, seen_port);
    CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS), "then closed");
    harness_stop(&h);
    client_close(&c);
}

/* ---------------------------------------------------------------- listeners the loop refuses */

#ifndef UP_LOOP_UV /* epoll's refusal of an exclusive watch; libuv has no exclusive watch */

static int log_lines;
static char last_log[256];

static void count_log(const char *message, void *user)
{
    (void)user;
    log_lines++;
    snprintf(last_log, sizeof(last_log), "%s", message);
}

static int logged_twice(void *arg)
{
    (void)arg;
    return log_lines >= 2;
}

/* With exclusive accepts, a listener's watch is a DEL and an ADD. When the loop refuses it (an
 * epoll descriptor adopted as a listener: EPOLLEXCLUSIVE on it is EINVAL), the server says so,
 * and tries again at the next tick, rather than leave a listener it believes watched. */
static void test_listener_the_loop_refuses_is_logged_and_retried(void)
{
    up_server_config_t cfg;
    up_server_config_defaults(&cfg);
    cfg.exclusive_accept = 1;
    harness_t h;
    up_server_handler_t handler = {.on_request = app_on_request, .on_log = count_log, .user = &app};
    log_lines = 0;
    harness_start(&h, &cfg, &handler);
    int inner = epoll_create1(EPOLL_CLOEXEC);
    const char *err = NULL;
    CHECK(up_server_adopt_listener(h.server, inner, &err) == 0, "adopted: %s", err);
    CHECK(log_lines == 1 && strstr(last_log, "cannot watch the listener") != NULL &&
              strstr(last_log, "Invalid argument") != NULL,
          "%d log lines, the last \"%s\"", log_lines, last_log);
    CHECK(h.server->listeners->watcher.events == 0, "the listener is not watched: events %u",
          h.server->listeners->watcher.events);
    CHECK(h.server->accept_paused, "accepting paused until the next tick");
    CHECK(harness_wait(&h, logged_twice, NULL, 3000), "tried again at the next tick");
    harness_stop(&h);
    close(inner);
}
#endif

/* ---------------------------------------------------------------- freeing the server */

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

static int stream_done(void *arg)
{
    return atomic_load(&((stream_t *)arg)->done);
}

static void test_server_free_with_open_connections(void)
{
    int fds_before = count_fds();
    up_server_config_t cfg;
    up_server_config_defaults(&cfg);
    cfg.spool_threshold = 1024; /* the partial upload goes to a temporary file */
    harness_t h;
    start(&h, &cfg);
    stream_t s = {.total = 1000, .part = 100, .limit = 1 << 20};
    app.stream = &s;
    enum { IDLE, MID_HEAD, SILENT, UNREAD_OUTPUT, SPOOLING, GIVEN_BACK, NUM };
    client_t c[NUM];
    client_open(&h, &c[IDLE], "GET / HTTP/1.1\r\n" HOST "\r\n", 0);
    response_t res;
    CHECK(client_read_response(&h, &c[IDLE], &res, 0, HARNESS_TIMEOUT_MS), "idle one answered");
    response_free(&res);
    app.big_body = 1024 * 1024;
    client_open(&h, &c[MID_HEAD], "GET / HTTP/1.1\r\nHo", 0);
    client_open(&h, &c[SILENT], NULL, 0);
    client_open(&h, &c[UNREAD_OUTPUT], "GET /big HTTP/1.1\r\n" HOST "\r\n", 4096);
    client_open(&h, &c[SPOOLING], "POST /up HTTP/1.1\r\n" HOST "Content-Length: 100000\r\n\r\n", 0);
    static char part[5000];
    harness_pattern(part, sizeof(part), 0);
    client_send(&h, &c[SPOOLING], part, sizeof(part));
    for (int i = 0; i < 5; i++)
        harness_turn(&h, 0);
    /* The thread gives the exchange back; the loop has not taken it when the server goes. */
    client_open(&h, &c[GIVEN_BACK], "GET /stream HTTP/1.1\r\n" HOST "\r\n", 0);
    uint64_t deadline = harness_now_ms() + HARNESS_TIMEOUT_MS;
    while (!stream_done(&s) && harness_now_ms() < deadline)
        usleep(1000);
    stream_join(&s);
    CHECK(up_server_num_conns(h.server) == NUM, "%zu connections open before the free",
          up_server_num_conns(h.server));
    const up_http1_t *spooling = up_conn_protocol_state(c[SPOOLING].conn);
    CHECK(spooling->exchange.req->body.fd >= 0, "the upload is being spooled to a file");

    harness_stop(&h);
    for (int i = 0; i < NUM; i++) {
        client_read_some(&c[i], SIZE_MAX);
        CHECK(c[i].eof, "client %d sees the close", i);
        client_close(&c[i]);
    }
    CHECK(count_fds() == fds_before, "every descriptor closed: %d open, %d before", count_fds(),
          fds_before);
}

int main(void)
{
    harness_watchdog(120);
    test_accepts_a_socket_without_an_ip_address();
    test_requests_whole_and_byte_by_byte();
    test_keep_alive_answers_requests_in_turn();
    test_pipelined_requests_answered_in_order();
    test_expect_continue_is_answered_before_the_body();
    test_handler_may_close_the_connection();
    test_bad_requests_get_an_error_and_the_close();
    test_lingering_close_is_bounded_per_event_and_in_all();
    test_pipeline_limit_holds_back_parsing();
    test_lent_exchange_streams_under_back_pressure();
    test_lent_exchange_given_back_with_its_whole_response();
    test_client_leaving_while_lent_breaks_the_exchange();
    test_post_to_a_broken_connection_still_asks_for_the_wake_up();
    test_idle_and_slow_connections_time_out();
    test_silent_connection_times_out();
    test_pipelining_client_cannot_grow_the_read_buffer();
    test_switch_to_another_protocol_after_a_response();
    test_server_free_with_open_connections();
    test_listener_address_outlives_a_graceful_stop();
#ifndef UP_LOOP_UV
    test_listener_the_loop_refuses_is_logged_and_retried();
#endif
    return test_report("conn");
}
