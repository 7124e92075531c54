/* Table tests for the response writer (response.c), through a real connection: each case's
 * handler makes up_response_* calls, and the client must read exactly the case's bytes (the
 * engine's Date line shown as "date: *"), the calls must return the case's codes, and the
 * connection must close or stay in sync for a next request. Framing follows RFC 9112 §6
 * (content-length, chunked, close-delimited), RFC 9110 §9.3.2 (HEAD), §15.2 (1xx),
 * §15.3.5 and §15.4.5 (204, 304 carry no body) and RFC 8297 (103 Early Hints). */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include "engine_harness.h"
#include "test.h"

/* ---------------------------------------------------------------- recording the calls */

/* The codes the writer returned, as words: "ok name value length state status gone", and
 * "rollback=N", "send=N" for the calls that return ints. */
static char calls[512];

static void rec(up_response_error_t e)
{
    static const char *names[] = {"ok", "status", "name", "value", "length", "state", "gone"};
    size_t at = strlen(calls);
    snprintf(calls + at, sizeof(calls) - at, "%s%s", at ? " " : "", names[e]);
}

static void rec_int(const char *what, int v)
{
    size_t at = strlen(calls);
    snprintf(calls + at, sizeof(calls) - at, "%s%s=%d", at ? " " : "", what, v);
}

#define HDR(conn, n, v) rec(up_response_add_header((conn), (n), sizeof(n) - 1, (v), sizeof(v) - 1))
#define WRITE(conn, s) rec(up_response_write((conn), (s), sizeof(s) - 1))

/* Shared slices and files the handler made, to check they are released. */
static int shared_made, shared_disposed;
static int files[4], num_files;

static void on_dispose(up_shared_t *shared)
{
    shared_disposed++;
    free(shared);
}

static up_shared_t *make_shared(const char *s)
{
    up_shared_t *shared = malloc(sizeof(*shared));
    up_shared_init(shared, s, strlen(s), on_dispose);
    shared_made++;
    return shared;
}

static int make_file(const char *s)
{
    int fd = harness_temp_file(s, strlen(s));
    files[num_files++] = fd;
    return fd;
}

/* ---------------------------------------------------------------- the handlers */

static void plain(up_exchange_t *ex, int64_t body_length)
{
    rec(up_response_start(ex, 200));
    HDR(ex, "content-type", "text/plain");
    rec(up_response_end_head(ex, body_length));
}

static void length_from_body(up_exchange_t *ex)
{
    plain(ex, 11);
    WRITE(ex, "hello world");
    rec(up_response_finish(ex));
}

static void app_length_wins(up_exchange_t *ex)
{
    rec(up_response_start(ex, 200));
    HDR(ex, "Content-Length", "5");
    rec(up_response_end_head(ex, 11));
    WRITE(ex, "hello");
    rec(up_response_finish(ex));
}

static void unknown_length(up_exchange_t *ex)
{
    plain(ex, -1);
    WRITE(ex, "hello");
    WRITE(ex, "");
    WRITE(ex, " world");
    rec(up_response_finish(ex));
}

static void head_and_body(up_exchange_t *ex)
{
    plain(ex, 5);
    WRITE(ex, "hello");
    rec(up_response_finish(ex));
}

static void no_content(up_exchange_t *ex)
{
    rec(up_response_start(ex, 204));
    HDR(ex, "content-length", "5");
    HDR(ex, "transfer-encoding", "chunked");
    HDR(ex, "x-kept", "yes");
    rec(up_response_end_head(ex, 5));
    WRITE(ex, "hello");
    rec(up_response_finish(ex));
}

static void not_modified(up_exchange_t *ex)
{
    rec(up_response_start(ex, 304));
    HDR(ex, "etag", "\"v1\"");
    HDR(ex, "content-length", "10");
    rec(up_response_end_head(ex, 10));
    WRITE(ex, "0123456789");
    rec(up_response_finish(ex));
}

static void bad_names(up_exchange_t *ex)
{
    rec(up_response_start(ex, 200));
    rec(up_response_add_header(ex, "", 0, "v", 1));
    HDR(ex, "bad name", "v");
    HDR(ex, "x:y", "v");
    HDR(ex, "caf\xc3\xa9", "v");
    HDR(ex, "x(y)", "v");
    HDR(ex, "Good-Name!#$%&'*+.^_`|~", "v");
    rec(up_response_end_head(ex, 0));
    rec(up_response_finish(ex));
}

static void bad_values(up_exchange_t *ex)
{
    rec(up_response_start(ex, 200));
    HDR(ex, "x-a", "one\r\nx-injected: yes");
    HDR(ex, "x-b", "bare\nlf");
    HDR(ex, "x-ex", "bare\rcr");
    rec(up_response_add_header(ex, "x-d", 3, "n\0l", 3));
    HDR(ex, "x-e", "caf\xc3\xa9 and\ttab");
    HDR(ex, "x-f", "");
    rec(up_response_end_head(ex, 0));
    rec(up_response_finish(ex));
}

static void bad_lengths(up_exchange_t *ex)
{
    rec(up_response_start(ex, 200));
    HDR(ex, "content-length", "abc");
    HDR(ex, "content-length", "-1");
    HDR(ex, "content-length", "");
    HDR(ex, "content-length", "1 2");
    HDR(ex, "content-length", "0x10");
    HDR(ex, "content-length", "1234567890123456789");
    HDR(ex, "content-length", "5");
    HDR(ex, "content-length", "6");
    HDR(ex, "Content-Length", "5");
    rec(up_response_end_head(ex, -1));
    WRITE(ex, "hello");
    rec(up_response_finish(ex));
}

static void out_of_order(up_exchange_t *ex)
{
    HDR(ex, "x-early", "v");
    rec(up_response_end_head(ex, 0));
    WRITE(ex, "early");
    rec(up_response_finish(ex));
    rec(up_response_start(ex, 99));
    rec(up_response_start(ex, 1000));
    rec(up_response_start(ex, 200));
    rec(up_response_start(ex, 201));
    WRITE(ex, "before the head");
    int fd = make_file("file");
    rec(up_response_sendfile(ex, fd, 0, 4));
    rec(up_response_end_head(ex, 2));
    HDR(ex, "x-late", "v");
    rec(up_response_end_head(ex, 2));
    WRITE(ex, "ok");
    rec(up_response_finish(ex));
    WRITE(ex, "after");
    rec(up_response_finish(ex));
}

static void body_too_long(up_exchange_t *ex)
{
    plain(ex, 5);
    WRITE(ex, "hel");
    WRITE(ex, "lo world");
    WRITE(ex, "!");
    rec(up_response_finish(ex));
}

static void body_too_short(up_exchange_t *ex)
{
    plain(ex, 10);
    WRITE(ex, "hello");
    rec(up_response_finish(ex));
}

static void rollback_before_send(up_exchange_t *ex)
{
    plain(ex, -1);
    WRITE(ex, "partial");
    rec_int("rollback", up_response_rollback(ex));
    rec(up_response_start(ex, 500));
    rec(up_response_end_head(ex, 4));
    WRITE(ex, "oops");
    rec(up_response_finish(ex));
}

static void rollback_after_send(up_exchange_t *ex)
{
    plain(ex, -1);
    WRITE(ex, "part");
    rec_int("send", up_response_send(ex));
    WRITE(ex, "more");
    rec_int("rollback", up_response_rollback(ex));
    WRITE(ex, "after");
}

static void unfinished(up_exchange_t *ex)
{
    plain(ex, 5);
    WRITE(ex, "hel");
}

static void early_hints(up_exchange_t *ex, int send)
{
    rec(up_response_start(ex, 103));
    HDR(ex, "link", "</a.css>; rel=preload");
    rec(up_response_end_head(ex, -1));
    if (send)
        rec_int("send", up_response_send(ex));
    rec(up_response_start(ex, 200));
    rec(up_response_end_head(ex, 2));
    WRITE(ex, "ok");
    rec(up_response_finish(ex));
}

static void early_hints_sent(up_exchange_t *ex)
{
    early_hints(ex, 1);
}

static void early_hints_queued(up_exchange_t *ex)
{
    early_hints(ex, 0);
}

static void shared_with_length(up_exchange_t *ex)
{
    up_shared_t *s = make_shared("hello world");
    plain(ex, 5);
    rec(up_response_write_shared(ex, s, 6, 5));
    rec(up_response_write_shared(ex, s, 0, 5)); /* past the length: cut to nothing */
    up_shared_release(s);
    rec(up_response_finish(ex));
}

static void shared_chunked(up_exchange_t *ex)
{
    up_shared_t *s = make_shared("hello world");
    plain(ex, -1);
    rec(up_response_write_shared(ex, s, 0, 5));
    WRITE(ex, ",");
    rec(up_response_write_shared(ex, s, 5, 6));
    up_shared_release(s);
    rec(up_response_finish(ex));
}

static void sendfile_range(up_exchange_t *ex)
{
    int fd = make_file("0123456789abcdef");
    plain(ex, 6);
    rec(up_response_sendfile(ex, fd, 4, 6));
    rec(up_response_finish(ex));
}

static void sendfile_cut(up_exchange_t *ex)
{
    int fd = make_file("0123456789abcdef");
    plain(ex, 3);
    rec(up_response_sendfile(ex, fd, 0, 10));
    rec(up_response_finish(ex));
}

static void sendfile_chunked(up_exchange_t *ex)
{
    int fd = make_file("0123456789abcdef");
    plain(ex, -1);
    rec(up_response_sendfile(ex, fd, 0, 4));
    WRITE(ex, "x");
    rec(up_response_finish(ex));
}

static void sendfile_head(up_exchange_t *ex)
{
    int fd = make_file("0123456789abcdef");
    plain(ex, 16);
    rec(up_response_sendfile(ex, fd, 0, 16));
    rec(up_response_finish(ex));
}

static void app_says_close(up_exchange_t *ex)
{
    rec(up_response_start(ex, 200));
    HDR(ex, "Connection", "Close");
    rec(up_response_end_head(ex, 2));
    WRITE(ex, "ok");
    rec(up_response_finish(ex));
}

static void app_says_keep_alive(up_exchange_t *ex)
{
    rec(up_response_start(ex, 200));
    HDR(ex, "connection", "keep-alive");
    rec(up_response_end_head(ex, 2));
    WRITE(ex, "ok");
    rec(up_response_finish(ex));
}

static void app_date(up_exchange_t *ex)
{
    rec(up_response_start(ex, 200));
    HDR(ex, "Date", "whenever");
    rec(up_response_end_head(ex, 0));
    rec(up_response_finish(ex));
}

static void app_frames_itself(up_exchange_t *ex)
{
    rec(up_response_start(ex, 200));
    HDR(ex, "Transfer-Encoding", "chunked");
    rec(up_response_end_head(ex, -1));
    WRITE(ex, "5\r\nhello\r\n0\r\n\r\n");
    rec(up_response_finish(ex));
}

static void odd_status(up_exchange_t *ex)
{
    rec(up_response_start(ex, 299));
    HDR(ex, "X-Mixed-Case", "Value Kept");
    rec(up_response_end_head(ex, 0));
    rec(up_response_finish(ex));
}

/* ---------------------------------------------------------------- the cases */

typedef struct response_case_t {
    const char *name;
    const char *request;
    void (*respond)(up_exchange_t *ex);
    const char *calls; /* the codes returned, in order */
    const char *wire;  /* every byte the client reads for this request */
    int closes;        /* then the connection closes; otherwise a next request must work */
} response_case_t;

#define GET11 "GET / HTTP/1.1\r\nHost: t\r\n\r\n"
#define GET10 "GET / HTTP/1.0\r\n\r\n"
#define HEAD11 "HEAD / HTTP/1.1\r\nHost: t\r\n\r\n"
#define OK200 "HTTP/1.1 200 OK\r\n"
#define TEXT "content-type: text/plain\r\n"
#define DATE "date: *\r\n"
#define CLOSE "connection: close\r\n"

static const response_case_t cases[] = {
    {"content-length from the body length given to end_head", GET11, length_from_body,
     "ok ok ok ok ok", OK200 TEXT "content-length: 11\r\n" DATE "\r\nhello world", 0},
    {"the app's content-length wins over the body length", GET11, app_length_wins, "ok ok ok ok ok",
     OK200 "content-length: 5\r\n" DATE "\r\nhello", 0},
    {"chunked when the length is unknown (HTTP/1.1)", GET11, unknown_length, "ok ok ok ok ok ok ok",
     OK200 TEXT "transfer-encoding: chunked\r\n" DATE "\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
     0},
    {"close-delimited when the length is unknown (HTTP/1.0)", GET10, unknown_length,
     "ok ok ok ok ok ok ok", OK200 TEXT CLOSE DATE "\r\nhello world", 1},
    {"HTTP/1.0 keep-alive with a length", "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
     length_from_body, "ok ok ok ok ok",
     OK200 TEXT "content-length: 11\r\nconnection: keep-alive\r\n" DATE "\r\nhello world", 0},
    {"HTTP/1.0 keep-alive without a length closes",
     "GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", unknown_length, "ok ok ok ok ok ok ok",
     OK200 TEXT CLOSE DATE "\r\nhello world", 1},
    {"HEAD sends the head only", HEAD11, head_and_body, "ok ok ok ok ok",
     OK200 TEXT "content-length: 5\r\n" DATE "\r\n", 0},
    {"HEAD with an unknown length has no framing", HEAD11, unknown_length, "ok ok ok ok ok ok ok",
     OK200 TEXT DATE "\r\n", 0},
    {"HEAD drops a file body", HEAD11, sendfile_head, "ok ok ok ok ok",
     OK200 TEXT "content-length: 16\r\n" DATE "\r\n", 0},
    {"204 drops content-length, transfer-encoding and the body", GET11, no_content,
     "ok ok ok ok ok ok ok", "HTTP/1.1 204 No Content\r\nx-kept: yes\r\n" DATE "\r\n", 0},
    {"304 keeps its fields but no length or body", GET11, not_modified, "ok ok ok ok ok ok",
     "HTTP/1.1 304 Not Modified\r\netag: \"v1\"\r\n" DATE "\r\n", 0},
    {"invalid header names are refused", GET11, bad_names, "ok name name name name name ok ok ok",
     OK200 "good-name!#$%&'*+.^_`|~: v\r\ncontent-length: 0\r\n" DATE "\r\n", 0},
    {"invalid header values are refused", GET11, bad_values,
     "ok value value value value ok ok ok ok",
     OK200 "x-e: caf\xc3\xa9 and\ttab\r\nx-f: \r\ncontent-length: 0\r\n" DATE "\r\n", 0},
    {"bad and conflicting content-lengths are refused", GET11, bad_lengths,
     "ok length length length length length length ok length ok ok ok ok",
     OK200 "content-length: 5\r\n" DATE "\r\nhello", 0},
    {"calls out of order are refused", GET11, out_of_order,
     "state state state state status status ok state state state ok state state ok ok state state",
     OK200 "content-length: 2\r\n" DATE "\r\nok", 0},
    {"a body longer than its content-length is cut", GET11, body_too_long, "ok ok ok ok ok ok ok",
     OK200 TEXT "content-length: 5\r\n" DATE "\r\nhello", 0},
    {"a body shorter than its content-length closes", GET11, body_too_short, "ok ok ok ok ok",
     OK200 TEXT "content-length: 10\r\n" DATE "\r\nhello", 1},
    {"rollback before anything was sent leaves no bytes", GET11, rollback_before_send,
     "ok ok ok ok rollback=1 ok ok ok ok",
     "HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\n" DATE "\r\noops", 0},
    {"after up_response_send there is no rollback", GET11, rollback_after_send,
     "ok ok ok ok send=0 ok rollback=0 state",
     OK200 TEXT "transfer-encoding: chunked\r\n" DATE "\r\n4\r\npart\r\n4\r\nmore\r\n", 1},
    {"a response left unfinished becomes a 500 if nothing was sent", GET11, unfinished,
     "ok ok ok ok",
     "HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain; charset=utf-8\r\n"
     "content-length: 22\r\n" CLOSE DATE "\r\nInternal Server Error\n",
     1},
    {"103 early hints sent, then the final response", GET11, early_hints_sent,
     "ok ok ok send=0 ok ok ok ok",
     "HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\n" OK200
     "content-length: 2\r\n" DATE "\r\nok",
     0},
    {"103 early hints queued with the final response", GET11, early_hints_queued,
     "ok ok ok ok ok ok ok",
     "HTTP/1.1 103 Early Hints\r\nlink: </a.css>; rel=preload\r\n\r\n" OK200
     "content-length: 2\r\n" DATE "\r\nok",
     0},
    {"write_shared under a content-length", GET11, shared_with_length, "ok ok ok ok ok ok",
     OK200 TEXT "content-length: 5\r\n" DATE "\r\nworld", 0},
    {"write_shared chunked", GET11, shared_chunked, "ok ok ok ok ok ok ok",
     OK200 TEXT "transfer-encoding: chunked\r\n" DATE
                "\r\n5\r\nhello\r\n1\r\n,\r\n6\r\n world\r\n0\r\n\r\n",
     0},
    {"sendfile of a file range", GET11, sendfile_range, "ok ok ok ok ok",
     OK200 TEXT "content-length: 6\r\n" DATE "\r\n456789", 0},
    {"sendfile past the content-length is cut", GET11, sendfile_cut, "ok ok ok ok ok",
     OK200 TEXT "content-length: 3\r\n" DATE "\r\n012", 0},
    {"sendfile is refused under chunked framing", GET11, sendfile_chunked, "ok ok ok state ok ok",
     OK200 TEXT "transfer-encoding: chunked\r\n" DATE "\r\n1\r\nx\r\n0\r\n\r\n", 0},
    {"connection: close from the app is honoured", GET11, app_says_close, "ok ok ok ok ok",
     OK200 "content-length: 2\r\n" CLOSE DATE "\r\nok", 1},
    {"connection: keep-alive from the app is not copied", GET11, app_says_keep_alive,
     "ok ok ok ok ok", OK200 "content-length: 2\r\n" DATE "\r\nok", 0},
    {"the app's date replaces ours", GET11, app_date, "ok ok ok ok",
     OK200 "date: whenever\r\ncontent-length: 0\r\n\r\n", 0},
    {"an app that frames its body itself: sent as is, then closed", GET11, app_frames_itself,
     "ok ok ok ok ok",
     OK200 "transfer-encoding: chunked\r\n" CLOSE DATE "\r\n5\r\nhello\r\n0\r\n\r\n", 1},
    {"a status without a reason, names in lower case", GET11, odd_status, "ok ok ok ok",
     "HTTP/1.1 299 \r\nx-mixed-case: Value Kept\r\ncontent-length: 0\r\n" DATE "\r\n", 0},
};

/* ---------------------------------------------------------------- running them */

static const response_case_t *current;

static up_request_result_t on_request(up_exchange_t *ex, void *user)
{
    (void)user;
    if (up_slice_eq(ex->req->head.path, "/next", 5)) {
        up_response_start(ex, 200);
        up_response_end_head(ex, 4);
        up_response_write(ex, "next", 4);
        up_response_finish(ex);
    } else {
        current->respond(ex);
    }
    return UP_REQUEST_DONE;
}

/* The bytes read so far with each Date line of ours ("date: " and 29 characters) shown as
 * "date: *". Returns a string to free. */
static char *normalized(const client_t *c)
{
    char *out = malloc(c->len + 1);
    size_t o = 0;
    for (size_t i = 0; i < c->len;) {
        if (c->len - i >= 37 && memcmp(c->in + i, "date: ", 6) == 0 &&
            memcmp(c->in + i + 31, " GMT\r\n", 6) == 0) {
            memcpy(out + o, DATE, 9);
            o += 9;
            i += 37;
        } else {
            out[o++] = c->in[i++];
        }
    }
    out[o] = '\0';
    return out;
}

static int wire_in(client_t *c, void *arg)
{
    char *got = normalized(c);
    int done = c->eof || strlen(got) >= strlen(arg);
    free(got);
    return done;
}

static int fd_is_open(int fd)
{
    return fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

static void run_case(const response_case_t *rc)
{
    harness_t h;
    up_server_handler_t handler = {.on_request = on_request};
    current = rc;
    calls[0] = '\0';
    shared_made = shared_disposed = num_files = 0;
    harness_start(&h, NULL, &handler);
    client_t c;
    client_open(&h, &c, rc->request, 0);
    int in = client_wait(&h, &c, SIZE_MAX, wire_in, (void *)rc->wire, HARNESS_TIMEOUT_MS);
    /* A few more turns: nothing may follow the expected bytes. */
    for (int i = 0; i < 5 && !rc->closes; i++)
        client_pump(&h, &c, SIZE_MAX);
    if (rc->closes)
        client_wait_eof(&h, &c, HARNESS_TIMEOUT_MS);
    char *got = normalized(&c);
    CHECK(in && strcmp(got, rc->wire) == 0, "%s: read\n%s\nexpected\n%s", rc->name, got, rc->wire);
    CHECK(strcmp(calls, rc->calls) == 0, "%s: calls returned \"%s\", expected \"%s\"", rc->name,
          calls, rc->calls);
    free(got);

    if (rc->closes) {
        CHECK(c.eof, "%s: the connection closed", rc->name);
    } else {
        /* Still in step: the next request gets its own, whole response. */
        c.pos = c.len;
        client_send_str(&h, &c, "GET /next HTTP/1.1\r\nHost: t\r\n\r\n");
        response_t res;
        int next = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
        CHECK(next && res.status == 200 && strcmp(res.body, "next") == 0 && c.pos == c.len,
              "%s: the connection goes on", rc->name);
        if (next)
            response_free(&res);
    }
    harness_stop(&h);
    client_close(&c);
    CHECK(shared_disposed == shared_made, "%s: %d of %d shared slices disposed", rc->name,
          shared_disposed, shared_made);
    for (int i = 0; i < num_files; i++)
        CHECK(!fd_is_open(files[i]), "%s: file %d closed", rc->name, i);
}

int main(void)
{
    harness_watchdog(60);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        run_case(&cases[i]);
    return test_report("response");
}
