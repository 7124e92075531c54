/* libFuzzer target for the HTTP/2 server side (ext/up/engine/http2/http2.c) as a client's bytes
 * reach it: a whole engine (loop, server, connection, the negotiating protocol, the nghttp2
 * session and our callbacks, the response writer's HTTP/2 ops) on the socketpair harness of the
 * engine's C tests, so every input runs what a real connection runs: header field checks,
 * stream creation and limits, request bodies, answers framed back through flow control, the
 * streams lent to the app and given back, the close.
 *
 * Input: the first byte picks the options, the rest is the client's frames after the preface
 * (which this target sends itself, so no mutation is spent breaking it):
 *   bits 0-1  how the frames are cut: whole, or pieces of 1 to 9, 100 or 1000 bytes (cut
 *             points from a hash of the input, so a saved crash replays the same way)
 *   bit 2     small limits: a 1 KiB header list, 8 fields, bodies of at most 100 bytes
 *   bit 3     the client reads nothing until its frames are sent (the server's output backs up)
 *   bit 4     lent streams are answered between pieces, not only at the end
 *   bit 5     a graceful stop of the server once the frames are sent (GOAWAY, streams finish)
 * A WebSocket (an extended CONNECT with :protocol websocket) is taken and echoes each message,
 * its ping answered and its close handshaken on the stream ("close" closes it from the app);
 * an event stream (a GET of /events accepting text/event-stream) sends one event and stays
 * open. Other requests are answered by path: /defer lends the stream and answers it later, /big streams 200 KB,
 * /post streams parts handed over without waking the loop, /rollback drops a started answer
 * for a 500, /file sends a file, /echo answers the body's size, /204 a bodiless status,
 * anything else a short text. Whatever the input, the connection must end once the client hangs up, and every
 * byte the engine took must be freed (LeakSanitizer, when the server is freed). */

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>
#include "engine_harness.h"
#include "fuzz.h"
#include "http1/request.h"
#include "http2/http2.h"
#include "sse/sse.h"
#include "websocket/websocket.h"

#define MAX_DEFERRED 32
/* Loop turns with nothing left to send, enough for every answer to be framed and written. */
#define SETTLE_TURNS 64
/* Loop turns after the client hung up within which the server must have let go of it. */
#define CLOSE_TURNS 1000

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
static const size_t spans[] = {0, 9, 100, 1000};

static up_exchange_t *deferred[MAX_DEFERRED];
static int num_deferred;
static int file_fd = -1;

static int path_is(const up_exchange_t *ex, const char *path)
{
    const up_slice_t *p = &ex->req->head.path;
    return p->len == strlen(path) && memcmp(p->base, path, p->len) == 0;
}

static void answer_text(up_exchange_t *ex, int status, const char *text)
{
    up_response_start(ex, status);
    up_response_add_header(ex, "content-type", 12, "text/plain", 10);
    up_response_end_head(ex, (int64_t)strlen(text));
    up_response_write(ex, text, strlen(text));
    up_response_finish(ex);
}

static void answer(up_exchange_t *ex)
{
    if (path_is(ex, "/big")) {
        char part[8192];
        memset(part, 'b', sizeof(part));
        up_response_start(ex, 200);
        up_response_end_head(ex, -1);
        for (int i = 0; i < 25; i++) {
            if (up_response_write(ex, part, sizeof(part)) != UP_RESPONSE_OK)
                break;
        }
        up_response_finish(ex);
    } else if (path_is(ex, "/post")) {
        up_response_start(ex, 200);
        up_response_end_head(ex, -1);
        for (int i = 0; i < 4; i++) {
            if (up_response_write(ex, "part\n", 5) != UP_RESPONSE_OK || up_response_post(ex) < 0)
                break;
        }
        up_response_finish(ex);
    } else if (path_is(ex, "/rollback")) {
        up_response_start(ex, 200);
        up_response_end_head(ex, -1);
        up_response_write(ex, "half", 4);
        if (up_response_rollback(ex))
            answer_text(ex, 500, "rolled back");
        else
            up_response_finish(ex);
    } else if (path_is(ex, "/file")) {
        int fd = dup(file_fd);
        FUZZ_CHECK(fd >= 0);
        up_response_start(ex, 200);
        up_response_end_head(ex, 5000);
        if (up_response_sendfile(ex, fd, 0, 5000) != UP_RESPONSE_OK)
            close(fd);
        up_response_finish(ex);
    } else if (path_is(ex, "/echo")) {
        char text[32];
        snprintf(text, sizeof(text), "%llu", (unsigned long long)ex->req->body.len);
        answer_text(ex, 200, text);
    } else if (path_is(ex, "/204")) {
        up_response_start(ex, 204);
        up_response_add_header(ex, "content-length", 14, "3", 1);
        up_response_end_head(ex, 0);
        up_response_finish(ex);
    } else {
        answer_text(ex, 200, ex->req->http2 ? "hello h2" : "hello h1");
    }
}

/* ---- long-lived streams: carried connections (http2/http2_tunnel.h) */

static void long_on_open(up_conn_t *conn, void *user)
{
    if (user == NULL)
        up_sse_any_send(conn, NULL, 0, "1", 1, "first\nevent", 11);
}

static void long_on_message(up_conn_t *conn, void *user, up_upgrade_message_t *msg)
{
    (void)user;
    up_ws_any_send(conn, msg->binary ? UP_WS_OP_BINARY : UP_WS_OP_TEXT, msg->data, msg->len);
    up_ws_any_consumed(conn, msg->len);
    if (msg->len == 5 && memcmp(msg->data, "close", 5) == 0)
        up_ws_any_close(conn, 1000);
    free(msg);
}

static const up_upgrade_events_t long_events = {long_on_open, long_on_message, NULL, NULL,
                                                NULL};

static const up_ws_settings_t ws_settings = {4096, 0, NULL};
static int ws_user; /* a WebSocket's user; an event stream's is NULL */

/* Takes an upgrade the request asks for; 1 when it did. */
static int take_upgrade(up_exchange_t *ex)
{
    up_conn_t *conn = NULL;
    if (ex->req->upgrade == UP_UPGRADE_WEBSOCKET) {
        up_ws_t *ws = up_ws_lent_start_accept(ex, &ws_settings);
        if (ws == NULL)
            return 0;
        conn = up_ws_lent_accept(ex, ws, &long_events, &ws_user);
    } else if (ex->req->upgrade == UP_UPGRADE_SSE && path_is(ex, "/events")) {
        if (up_sse_lent_start_accept(ex) != 0)
            return 0;
        conn = up_sse_lent_accept(ex, 1000, &long_events, NULL);
    } else {
        return 0;
    }
    if (conn != NULL)
        up_conn_release(conn); /* the loop keeps it while it is open */
    return 1;
}

static up_request_result_t on_request(up_exchange_t *ex, void *user)
{
    (void)user;
    if (take_upgrade(ex))
        return UP_REQUEST_DONE;
    if (path_is(ex, "/defer") && num_deferred < MAX_DEFERRED) {
        deferred[num_deferred++] = ex;
        return UP_REQUEST_DEFERRED;
    }
    answer(ex);
    return UP_REQUEST_DONE;
}

/* The app gives every lent stream back, answered, as an app thread would (any thread may). */
static void answer_deferred(void)
{
    for (int i = 0; i < num_deferred; i++) {
        answer(deferred[i]);
        up_exchange_return(deferred[i]);
    }
    num_deferred = 0;
}

/* Takes what the server wrote and drops it: the client's buffer never grows. */
static void drain(client_t *c)
{
    client_read_some(c, SIZE_MAX);
    c->len = c->pos = 0;
}

/* Sends what the socket takes now; returns 0, or -1 when the server is gone. */
static int send_some(client_t *c, const uint8_t *p, size_t len, size_t *sent)
{
    *sent = 0;
    while (*sent < len) {
        ssize_t n = send(c->fd, p + *sent, len - *sent, MSG_NOSIGNAL);
        if (n > 0) {
            *sent += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        return -1;
    }
    return 0;
}

/* Sends all of p, turning the loop while the socket is full; gives up when the server is gone
 * or takes nothing for many turns (it stopped reading: a flood it refused). */
static int send_all(harness_t *h, client_t *c, const uint8_t *p, size_t len, int reading)
{
    int stalled = 0;
    while (len > 0) {
        size_t sent;
        if (send_some(c, p, len, &sent) != 0)
            return -1;
        p += sent;
        len -= sent;
        if (len == 0)
            break;
        stalled = sent > 0 ? 0 : stalled + 1;
        if (stalled > SETTLE_TURNS)
            return -1;
        if (reading)
            drain(c);
        harness_turn(h, 0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t opts = data[0];
    data++;
    size--;
    size_t span = spans[opts & 3];
    int small = opts & 4, reading = !(opts & 8), answer_early = opts & 16, stop = opts & 32;
    uint32_t rng = fuzz_seed(data, size);

    if (file_fd < 0) {
        char content[5000];
        harness_pattern(content, sizeof(content), 0);
        file_fd = harness_temp_file(content, sizeof(content));
    }
    up_server_config_t cfg;
    up_server_config_defaults(&cfg);
    if (small) {
        cfg.max_head_size = 1024;
        cfg.max_headers = 8;
        cfg.max_body_size = 100;
    }
    up_server_handler_t handler = {.on_request = on_request};
    harness_t h;
    harness_start(&h, &cfg, &handler);
    num_deferred = 0;

    client_t c;
    client_open_with(&h, &c, NULL, 0, &up_http2_negotiate_protocol);
    int alive = send_all(&h, &c, (const uint8_t *)preface, sizeof(preface) - 1, reading) == 0;
    size_t at = 0;
    while (alive && at < size) {
        size_t n = span == 0 ? size - at : fuzz_piece(&rng, span, size - at);
        alive = send_all(&h, &c, data + at, n, reading) == 0;
        at += n;
        if (reading)
            drain(&c);
        harness_turn(&h, 0);
        if (answer_early)
            answer_deferred();
    }
    if (stop)
        up_server_stop(h.server);
    for (int i = 0; i < SETTLE_TURNS && !c.eof; i++) {
        drain(&c);
        harness_turn(&h, 0);
        if (i == SETTLE_TURNS / 2)
            answer_deferred();
    }
    answer_deferred();
    for (int i = 0; i < SETTLE_TURNS && !c.eof; i++) {
        drain(&c);
        harness_turn(&h, 0);
    }

    client_close(&c);
    int turns = 0;
    while (up_server_num_conns(h.server) > 0 && turns++ < CLOSE_TURNS)
        harness_turn(&h, 1);
    /* A stream lent after the last answer_deferred (the close itself runs none) must not keep
     * the connection: the app still gives it back. */
    answer_deferred();
    while (up_server_num_conns(h.server) > 0 && turns++ < CLOSE_TURNS)
        harness_turn(&h, 1);
    FUZZ_CHECK(up_server_num_conns(h.server) == 0);
    harness_stop(&h);
    return 0;
}
