/* The WebSocket protocol on a connection (websocket.c) and event streams (sse.c), over
 * socketpairs with a C handler that echoes: the handshake and its refusals (RFC 6455 §4.2),
 * messages whole and fragmented with control frames between (§5.4), UTF-8 across fragments
 * (§8.1), the close handshake both ways (§5.5.1, §7), the size limit, pings of an idle client,
 * inbound flow control, pending and drained, the graceful stop, and an event stream's framing
 * and heartbeat. Frames the client sends are masked with websocket_frame.h's writer; what the
 * server sends is read with its reader. */

#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include "engine_harness.h"
#include "sse/sse.h"
#include "test.h"
#include "websocket/websocket.h"
#include <zlib.h>

#define KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
#define UPGRADE_HEADERS                                                                          \
    "Host: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"

/* ---------------------------------------------------------------- the app */

typedef struct app_t {
    up_ws_settings_t settings;
    int hold;          /* keep messages instead of echoing and consuming them */
    size_t held;       /* bytes held */
    int opens, messages, drained, shutdowns, closes;
    unsigned close_code;
    up_conn_t *conn;   /* the last upgraded connection */
    int sse;           /* answer event-stream requests */
    int plain_requests;
} app_t;

static app_t app;

static void on_open(up_conn_t *conn, void *user)
{
    (void)user;
    app.opens++;
    app.conn = conn;
    if (app.sse)
        up_sse_any_send(conn, "hello", 5, "1", 1, "first\nsecond", 12);
}

static void on_message(up_conn_t *conn, void *user, up_upgrade_message_t *msg)
{
    (void)user;
    app.messages++;
    if (app.hold) {
        app.held += msg->len;
    } else {
        up_ws_any_send(conn, msg->binary ? UP_WS_OP_BINARY : UP_WS_OP_TEXT, msg->data, msg->len);
        up_ws_any_consumed(conn, msg->len);
    }
    free(msg);
}

static void on_drained(up_conn_t *conn, void *user)
{
    (void)conn;
    (void)user;
    app.drained++;
}

static void on_shutdown(up_conn_t *conn, void *user)
{
    (void)user;
    app.shutdowns++;
    up_ws_any_send(conn, UP_WS_OP_TEXT, "bye", 3);
    up_ws_any_close(conn, UP_WS_CLOSE_GOING_AWAY);
}

static void on_close(up_conn_t *conn, void *user, unsigned code)
{
    (void)conn;
    (void)user;
    app.closes++;
    app.close_code = code;
}

static const up_upgrade_events_t events = {on_open, on_message, on_drained, on_shutdown, on_close};

static up_request_result_t on_request(up_exchange_t *ex, void *user)
{
    (void)user;
    if (ex->req->upgrade == UP_UPGRADE_WEBSOCKET) {
        up_ws_t *ws = up_ws_lent_start_accept(ex, &app.settings);
        up_response_add_header(ex, "set-cookie", 10, "a=1", 3);
        up_conn_release(up_ws_lent_accept(ex, ws, &events, NULL));
        return UP_REQUEST_DONE;
    }
    if (ex->req->upgrade == UP_UPGRADE_SSE && app.sse) {
        up_sse_lent_start_accept(ex);
        up_conn_release(up_sse_lent_accept(ex, 1000, &events, NULL));
        return UP_REQUEST_DONE;
    }
    app.plain_requests++;
    up_response_send_simple(ex, 200, "plain", 0);
    return UP_REQUEST_DONE;
}

static void start(harness_t *h)
{
    memset(&app, 0, sizeof(app));
    app.settings.max_message = 1024 * 1024;
    up_server_handler_t handler = {.on_request = on_request};
    harness_start(h, NULL, &handler);
}

/* ---------------------------------------------------------------- the client */

static const uint8_t mask_key[4] = {0x37, 0xfa, 0x21, 0x3d};

/* Sends one masked frame. */
static void send_frame(harness_t *h, client_t *c, int fin, int opcode, const void *payload,
                       size_t len)
{
    uint8_t header[UP_WS_MAX_HEADER];
    size_t n = up_ws_frame_header_masked(header, fin, 0, opcode, len, mask_key);
    char *frame = malloc(n + len + 1);
    memcpy(frame, header, n);
    memcpy(frame + n, payload, len);
    up_ws_mask(frame + n, len, mask_key, 0);
    CHECK(client_send(h, c, frame, n + len) == 0, "frame sent");
    free(frame);
}

static size_t masked(char *out, int fin, int opcode, const char *payload, size_t len)
{
    uint8_t header[UP_WS_MAX_HEADER];
    size_t n = up_ws_frame_header_masked(header, fin, 0, opcode, len, mask_key);
    memcpy(out, header, n);
    memcpy(out + n, payload, len);
    up_ws_mask(out + n, len, mask_key, 0);
    return n + len;
}

static void send_text(harness_t *h, client_t *c, const char *s)
{
    send_frame(h, c, 1, UP_WS_OP_TEXT, s, strlen(s));
}

/* One frame as the client read it. */
typedef struct frame_t {
    int opcode, fin;
    char payload[2 * 1024 * 1024];
    size_t len;
    int done;
} frame_t;

static frame_t frame;

static int frame_on_data(void *user, int opcode, int compressed, const char *data, size_t len,
                         int fin)
{
    frame_t *f = user;
    (void)compressed;
    f->opcode = opcode;
    memcpy(f->payload + f->len, data, len);
    f->len += len;
    if (fin) {
        f->fin = 1;
        f->done = 1;
        return 1;
    }
    return 0;
}

static int frame_on_control(void *user, int opcode, const char *payload, size_t len)
{
    frame_t *f = user;
    f->opcode = opcode;
    memcpy(f->payload, payload, len);
    f->len = len;
    f->done = 1;
    return 1;
}

static const up_ws_reader_callbacks_t frame_callbacks = {frame_on_data, frame_on_control};

typedef struct ws_client_t {
    client_t c;
    up_ws_reader_t reader;
} ws_client_t;

/* Opens a WebSocket; returns the 101's status (0 when none came). */
static int ws_open(harness_t *h, ws_client_t *w)
{
    client_open(h, &w->c, "GET /chat HTTP/1.1\r\n" UPGRADE_HEADERS "Sec-WebSocket-Key: " KEY "\r\n\r\n",
                0);
    response_t res;
    int ok = client_read_response(h, &w->c, &res, 1, HARNESS_TIMEOUT_MS);
    int status = ok ? res.status : 0;
    if (ok) {
        CHECK(strstr(res.raw, "sec-websocket-accept: " ACCEPT "\r\n") != NULL &&
                  strstr(res.raw, "upgrade: websocket\r\n") != NULL &&
                  strstr(res.raw, "set-cookie: a=1\r\n") != NULL,
              "the 101 carries the accept key, the upgrade and the app's field: %s", res.raw);
        response_free(&res);
    }
    up_ws_reader_init(&w->reader, &frame_callbacks, &frame, 0, UP_WS_READER_FROM_SERVER);
    return status;
}

/* Reads the next frame the server sent into `frame`; returns 1, or 0 on timeout or error. */
static int ws_read(harness_t *h, ws_client_t *w)
{
    frame.opcode = frame.fin = frame.done = 0;
    frame.len = 0;
    uint64_t deadline = harness_now_ms() + HARNESS_TIMEOUT_MS;
    for (;;) {
        if (w->c.pos < w->c.len) {
            ssize_t r = up_ws_read(&w->reader, w->c.in + w->c.pos, w->c.len - w->c.pos);
            if (r < 0)
                return 0;
            w->c.pos += (size_t)r;
            if (frame.done)
                return 1;
        }
        if (w->c.eof || harness_now_ms() >= deadline)
            return 0;
        client_pump(h, &w->c, 1 << 20);
    }
}

static int close_code_of_frame(void)
{
    if (frame.opcode != UP_WS_OP_CLOSE || frame.len < 2)
        return frame.opcode == UP_WS_OP_CLOSE ? 1005 : -1;
    return ((unsigned char)frame.payload[0] << 8) | (unsigned char)frame.payload[1];
}

static int app_closed(void *arg)
{
    (void)arg;
    return app.closes > 0;
}

static int has_eof(client_t *c, void *arg)
{
    (void)arg;
    return c->eof;
}

/* ---------------------------------------------------------------- handshake */

static void test_handshake_answers_101_and_opens(void)
{
    harness_t h;
    start(&h);
    ws_client_t w;
    CHECK(ws_open(&h, &w) == 101, "101 Switching Protocols");
    for (int i = 0; i < 5 && app.opens == 0; i++)
        harness_turn(&h, 1);
    CHECK(app.opens == 1, "on_open ran once: %d", app.opens);
    client_close(&w.c);
    CHECK(harness_wait(&h, app_closed, NULL, HARNESS_TIMEOUT_MS), "closed");
    CHECK(app.close_code == 1006, "gone without a Close: 1006, not %u", app.close_code);
    harness_stop(&h);
}

static void refusal(const char *request, int status, const char *must_have, const char *name)
{
    harness_t h;
    start(&h);
    client_t c;
    client_open(&h, &c, request, 0);
    response_t res;
    CHECK(client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS), "%s: a response", name);
    CHECK(res.status == status, "%s: %d, not %d", name, status, res.status);
    if (must_have != NULL)
        CHECK(res.raw != NULL && strstr(res.raw, must_have) != NULL, "%s: has %s", name, must_have);
    if (status == 400)
        CHECK(client_wait_eof(&h, &c, HARNESS_TIMEOUT_MS), "%s: then the close", name);
    CHECK(app.opens == 0, "%s: no WebSocket opened", name);
    response_free(&res);
    client_close(&c);
    harness_stop(&h);
}

static void test_bad_handshakes_are_refused(void)
{
    refusal("GET / HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Version: 8\r\nSec-WebSocket-Key: " KEY "\r\n\r\n",
            400, "sec-websocket-version: 13\r\n", "version 8");
    refusal("GET / HTTP/1.1\r\n" UPGRADE_HEADERS "\r\n", 400, NULL, "no key");
    refusal("GET / HTTP/1.1\r\n" UPGRADE_HEADERS "Sec-WebSocket-Key: c2hvcnQ=\r\n\r\n", 400, NULL,
            "a key of 5 bytes");
    refusal("POST / HTTP/1.1\r\n" UPGRADE_HEADERS "Sec-WebSocket-Key: " KEY
            "\r\nContent-Length: 0\r\n\r\n",
            400, NULL, "POST");
    /* Upgrade without Connection: upgrade is a plain request (the app sees no upgrade). */
    refusal("GET / HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
            "Sec-WebSocket-Key: " KEY "\r\n\r\n",
            200, "plain", "no Connection: upgrade");
}

/* ---------------------------------------------------------------- messages */

static void test_messages_are_echoed_whole(void)
{
    harness_t h;
    start(&h);
    ws_client_t w;
    ws_open(&h, &w);
    send_text(&h, &w.c, "hello");
    CHECK(ws_read(&h, &w) && frame.opcode == UP_WS_OP_TEXT && frame.len == 5 &&
              memcmp(frame.payload, "hello", 5) == 0,
          "text echoed");
    static const char bin[] = {0, 1, 2, (char)0xff};
    send_frame(&h, &w.c, 1, UP_WS_OP_BINARY, bin, 4);
    CHECK(ws_read(&h, &w) && frame.opcode == UP_WS_OP_BINARY && frame.len == 4 &&
              memcmp(frame.payload, bin, 4) == 0,
          "binary echoed");
    send_text(&h, &w.c, "");
    CHECK(ws_read(&h, &w) && frame.opcode == UP_WS_OP_TEXT && frame.len == 0, "empty echoed");
    /* Fragmented, with a ping between the fragments (§5.4): the pong comes first, then the
     * message whole. The fragments split a 2-byte character (é) for the UTF-8 check. */
    send_frame(&h, &w.c, 0, UP_WS_OP_TEXT, "caf\xc3", 4);
    send_frame(&h, &w.c, 1, UP_WS_OP_PING, "p", 1);
    send_frame(&h, &w.c, 1, UP_WS_OP_CONTINUATION, "\xa9!", 2);
    CHECK(ws_read(&h, &w) && frame.opcode == UP_WS_OP_PONG && frame.len == 1 &&
              frame.payload[0] == 'p',
          "pong with the ping's payload");
    CHECK(ws_read(&h, &w) && frame.opcode == UP_WS_OP_TEXT && frame.len == 6 &&
              memcmp(frame.payload, "caf\xc3\xa9!", 6) == 0,
          "the fragments echoed as one message");
    CHECK(app.messages == 4, "%d messages", app.messages);
    CHECK(app.drained == 0, "no on_drained for an app that never asked for pending");
    client_close(&w.c);
    harness_stop(&h);
}

/* Byte by byte: a client that trickles its frames gets the same messages. */
static void test_frames_split_byte_by_byte(void)
{
    harness_t h;
    start(&h);
    ws_client_t w;
    ws_open(&h, &w);
    uint8_t header[UP_WS_MAX_HEADER];
    size_t n = up_ws_frame_header_masked(header, 1, 0, UP_WS_OP_TEXT, 11, mask_key);
    char bytes[64];
    memcpy(bytes, header, n);
    memcpy(bytes + n, "hello world", 11);
    up_ws_mask(bytes + n, 11, mask_key, 0);
    for (size_t i = 0; i < n + 11; i++) {
        client_send(&h, &w.c, bytes + i, 1);
        harness_turn(&h, 0);
    }
    CHECK(ws_read(&h, &w) && frame.len == 11 && memcmp(frame.payload, "hello world", 11) == 0,
          "echoed whole");
    client_close(&w.c);
    harness_stop(&h);
}

/* A protocol error gets its close code, then the end. */
static void failing(const char *name, const void *bytes, size_t len, int code)
{
    harness_t h;
    start(&h);
    ws_client_t w;
    ws_open(&h, &w);
    client_send(&h, &w.c, bytes, len);
    CHECK(ws_read(&h, &w) && close_code_of_frame() == code, "%s: close %d, got opcode %d code %d",
          name, code, frame.opcode, close_code_of_frame());
    client_shut_write(&w.c);
    CHECK(client_wait(&h, &w.c, 4096, has_eof, NULL, HARNESS_TIMEOUT_MS), "%s: then the end", name);
    CHECK(harness_wait(&h, app_closed, NULL, HARNESS_TIMEOUT_MS) && app.close_code == (unsigned)code,
          "%s: on_close with %d, not %u", name, code, app.close_code);
    client_close(&w.c);
    harness_stop(&h);
}


static void test_protocol_errors_close_with_their_code(void)
{
    char buf[256];
    failing("unmasked", "\x81\x02hi", 4, 1002);
    failing("reserved opcode", buf, masked(buf, 1, 0x3, "x", 1), 1002);
    size_t n = masked(buf, 1, UP_WS_OP_TEXT, "\xff", 1);
    failing("invalid UTF-8", buf, n, 1007);
    n = masked(buf, 0, UP_WS_OP_TEXT, "ok", 2);
    n += masked(buf + n, 1, UP_WS_OP_CONTINUATION, "\xed\xa0\x80", 3); /* a surrogate */
    failing("invalid UTF-8 in a continuation", buf, n, 1007);
    n = masked(buf, 1, UP_WS_OP_TEXT, "\xc3", 1);
    failing("text ending inside a character", buf, n, 1007);
    n = masked(buf, 1, UP_WS_OP_CONTINUATION, "x", 1);
    failing("continuation with no message", buf, n, 1002);
    n = masked(buf, 1, UP_WS_OP_CLOSE, "\x03\xe8\xff", 3);
    failing("close reason not UTF-8", buf, n, 1007);
    n = masked(buf, 1, UP_WS_OP_CLOSE, "\x03\xed", 2); /* 1005 may not be sent */
    failing("close code 1005", buf, n, 1002);
}

static void test_message_over_the_limit_closes_1009(void)
{
    harness_t h;
    start(&h);
    app.settings.max_message = 1000;
    ws_client_t w;
    ws_open(&h, &w);
    static char big[1001];
    memset(big, 'a', sizeof(big));
    send_frame(&h, &w.c, 0, UP_WS_OP_TEXT, big, 600);
    send_frame(&h, &w.c, 1, UP_WS_OP_CONTINUATION, big, 401);
    CHECK(ws_read(&h, &w) && close_code_of_frame() == 1009, "1009, got %d", close_code_of_frame());
    CHECK(app.messages == 0, "nothing handed to the app");
    client_close(&w.c);
    harness_stop(&h);
}

/* ---------------------------------------------------------------- closing */

static void test_client_close_is_echoed(void)
{
    harness_t h;
    start(&h);
    ws_client_t w;
    ws_open(&h, &w);
    send_frame(&h, &w.c, 1, UP_WS_OP_CLOSE, "\x0f\xa1" "bye", 5); /* 4001 */
    CHECK(ws_read(&h, &w) && close_code_of_frame() == 4001, "4001 echoed, got %d",
          close_code_of_frame());
    client_shut_write(&w.c);
    CHECK(client_wait(&h, &w.c, 4096, has_eof, NULL, HARNESS_TIMEOUT_MS), "then the end");
    CHECK(harness_wait(&h, app_closed, NULL, HARNESS_TIMEOUT_MS) && app.close_code == 4001,
          "on_close with 4001: %u", app.close_code);
    client_close(&w.c);
    harness_stop(&h);
}

static void test_empty_close_is_answered_without_a_code(void)
{
    harness_t h;
    start(&h);
    ws_client_t w;
    ws_open(&h, &w);
    send_frame(&h, &w.c, 1, UP_WS_OP_CLOSE, "", 0);
    CHECK(ws_read(&h, &w) && frame.opcode == UP_WS_OP_CLOSE && frame.len == 0,
          "an empty Close answered with an empty Close");
    CHECK(harness_wait(&h, app_closed, NULL, HARNESS_TIMEOUT_MS) && app.close_code == 1005,
          "on_close with 1005: %u", app.close_code);
    client_close(&w.c);
    harness_stop(&h);
}

/* The app closes from another thread: what it sent before comes first, nothing after. */
static void test_app_close_follows_its_messages(void)
{
    harness_t h;
    start(&h);
    ws_client_t w;
    ws_open(&h, &w);
    for (int i = 0; i < 5 && app.conn == NULL; i++)
        harness_turn(&h, 1);
    up_conn_t *conn = app.conn;
    up_conn_retain(conn);
    CHECK(up_ws_any_send(conn, UP_WS_OP_TEXT, "last", 4) == 0, "sent");
    CHECK(up_ws_any_close(conn, 4000) == 0, "close asked");
    CHECK(ws_read(&h, &w) && frame.opcode == UP_WS_OP_TEXT && frame.len == 4, "the message");
    CHECK(ws_read(&h, &w) && close_code_of_frame() == 4000, "then the Close with 4000");
    CHECK(up_ws_any_send(conn, UP_WS_OP_TEXT, "late", 4) == -1, "nothing may follow the Close");
    CHECK(up_ws_any_pending(conn) == -1, "pending is -1 once closing");
    send_frame(&h, &w.c, 1, UP_WS_OP_CLOSE, "\x0f\xa0", 2);
    client_shut_write(&w.c);
    CHECK(client_wait(&h, &w.c, 4096, has_eof, NULL, HARNESS_TIMEOUT_MS), "then the end");
    CHECK(harness_wait(&h, app_closed, NULL, HARNESS_TIMEOUT_MS) && app.close_code == 4000,
          "on_close with 4000: %u", app.close_code);
    up_conn_release(conn);
    client_close(&w.c);
    harness_stop(&h);
}

/* ---------------------------------------------------------------- flow control */

/* A client reading nothing: pending counts the writes; once it reads, on_drained, and 0. */
static void test_pending_and_drained(void)
{
    harness_t h;
    start(&h);
    ws_client_t w;
    client_open(&h, &w.c, "GET /chat HTTP/1.1\r\n" UPGRADE_HEADERS "Sec-WebSocket-Key: " KEY "\r\n\r\n",
                4096);
    response_t res;
    client_read_response(&h, &w.c, &res, 1, HARNESS_TIMEOUT_MS);
    response_free(&res);
    up_ws_reader_init(&w.reader, &frame_callbacks, &frame, 0, UP_WS_READER_FROM_SERVER);
    for (int i = 0; i < 5 && app.conn == NULL; i++)
        harness_turn(&h, 1);
    static char part[65536];
    for (int i = 0; i < 8; i++)
        up_ws_any_send(app.conn, UP_WS_OP_BINARY, part, sizeof(part));
    for (int i = 0; i < 5; i++)
        harness_turn(&h, 1);
    long pending = up_ws_any_pending(app.conn);
    CHECK(pending > 0 && pending <= 8, "pending %ld while the client reads nothing", pending);
    CHECK(app.drained == 0, "not drained yet");
    for (int i = 0; i < 8; i++)
        CHECK(ws_read(&h, &w) && frame.len == sizeof(part), "message %d read", i);
    for (int i = 0; i < 20 && app.drained == 0; i++)
        harness_turn(&h, 1);
    CHECK(app.drained == 1 && up_ws_any_pending(app.conn) == 0, "drained once (%d), pending 0",
          app.drained);
    client_close(&w.c);
    harness_stop(&h);
}

/* An app that does not keep up: past UP_WS_MAX_INBOUND the connection stops reading; once the
 * app consumed, it reads on and every message comes. A thread sends, since the sending blocks
 * while the server does not read. */
typedef struct sender_t {
    int fd;
    char *bytes;
    size_t len;
    pthread_t thread;
} sender_t;

static void *sender_run(void *arg)
{
    sender_t *s = arg;
    size_t done = 0;
    uint64_t deadline = harness_now_ms() + 2 * HARNESS_TIMEOUT_MS;
    while (done < s->len && harness_now_ms() < deadline) {
        ssize_t n = send(s->fd, s->bytes + done, s->len - done, MSG_NOSIGNAL);
        if (n > 0)
            done += (size_t)n;
        else
            usleep(1000);
    }
    return NULL;
}

static void test_reading_stops_while_the_app_is_behind(void)
{
    harness_t h;
    start(&h);
    app.hold = 1;
    ws_client_t w;
    ws_open(&h, &w);
    enum { PART = 256 * 1024, PARTS = 8 };
    static char part[PART];
    memset(part, 'x', sizeof(part));
    sender_t s = {w.c.fd, malloc(PARTS * (PART + UP_WS_MAX_HEADER)), 0, 0};
    for (int i = 0; i < PARTS; i++)
        s.len += masked(s.bytes + s.len, 1, UP_WS_OP_BINARY, part, PART);
    pthread_create(&s.thread, NULL, sender_run, &s);
    /* However late the sender thread gets a core (a loaded machine, a sanitizer), the app
     * comes to hold the bound; turns after that would let more in if reading did not stop. */
    uint64_t deadline = harness_now_ms() + HARNESS_TIMEOUT_MS;
    while (app.held < UP_WS_MAX_INBOUND && harness_now_ms() < deadline)
        harness_turn(&h, 1);
    for (int i = 0; i < 200; i++)
        harness_turn(&h, 1);
    CHECK(app.held >= UP_WS_MAX_INBOUND && app.held < (size_t)PARTS * PART,
          "stopped after %zu bytes", app.held);
    up_conn_t *conn = app.conn;
    size_t held = app.held;
    app.hold = 0;
    app.held = 0;
    up_ws_any_consumed(conn, held);
    deadline = harness_now_ms() + 2 * HARNESS_TIMEOUT_MS;
    while (app.messages < PARTS && harness_now_ms() < deadline) {
        harness_turn(&h, 1);
        client_read_some(&w.c, SIZE_MAX); /* the echoes */
    }
    pthread_join(s.thread, NULL);
    CHECK(app.messages == PARTS, "all %d messages came after the app caught up: %d", PARTS,
          app.messages);
    free(s.bytes);
    client_close(&w.c);
    harness_stop(&h);
}

/* ---------------------------------------------------------------- idle and stop */

/* Idle for ping_ms: a ping; idle again as long: 1001. */
static void test_idle_client_is_pinged_then_closed(void)
{
    harness_t h;
    start(&h);
    app.settings.ping_ms = 1000;
    ws_client_t w;
    ws_open(&h, &w);
    CHECK(ws_read(&h, &w) && frame.opcode == UP_WS_OP_PING, "a ping after a second of silence");
    CHECK(ws_read(&h, &w) && close_code_of_frame() == 1001, "then 1001, got %d",
          close_code_of_frame());
    client_close(&w.c);
    harness_stop(&h);
}

static void test_pong_keeps_the_client(void)
{
    harness_t h;
    start(&h);
    app.settings.ping_ms = 1000;
    ws_client_t w;
    ws_open(&h, &w);
    for (int i = 0; i < 2; i++) {
        CHECK(ws_read(&h, &w) && frame.opcode == UP_WS_OP_PING, "ping %d", i);
        send_frame(&h, &w.c, 1, UP_WS_OP_PONG, "", 0);
    }
    CHECK(app.closes == 0, "still open after answering two pings");
    client_close(&w.c);
    harness_stop(&h);
}

/* A graceful stop: on_shutdown, whose goodbye and 1001 the client reads. */
static void test_stop_calls_on_shutdown(void)
{
    harness_t h;
    start(&h);
    ws_client_t w;
    ws_open(&h, &w);
    for (int i = 0; i < 5 && app.opens == 0; i++)
        harness_turn(&h, 1);
    up_server_stop(h.server);
    CHECK(ws_read(&h, &w) && frame.opcode == UP_WS_OP_TEXT && frame.len == 3, "the goodbye");
    CHECK(ws_read(&h, &w) && close_code_of_frame() == 1001, "then 1001");
    CHECK(app.shutdowns == 1, "on_shutdown once");
    client_close(&w.c);
    harness_stop(&h);
}

/* ---------------------------------------------------------------- event streams */

static int has_text(client_t *c, void *arg)
{
    c->in[c->len] = '\0';
    return strstr(c->in, arg) != NULL;
}

static void test_event_stream_frames_events_and_beats(void)
{
    harness_t h;
    start(&h);
    app.sse = 1;
    client_t c;
    client_open(&h, &c, "GET /events HTTP/1.1\r\nHost: t\r\nAccept: text/html, text/event-stream;q=0.9\r\n\r\n",
                0);
    CHECK(client_wait(&h, &c, 4096, has_text, "id: 1\nevent: hello\ndata: first\ndata: second\n\n",
                      HARNESS_TIMEOUT_MS),
          "the first event, one data line per line");
    c.in[c.len] = '\0';
    CHECK(strstr(c.in, "HTTP/1.1 200 OK\r\n") == c.in &&
              strstr(c.in, "content-type: text/event-stream\r\n") != NULL &&
              strstr(c.in, "connection: close\r\n") != NULL &&
              strstr(c.in, "content-length") == NULL && strstr(c.in, "chunked") == NULL,
          "a 200 event-stream head with no length and no chunks: %s", c.in);
    CHECK(up_sse_any_send(app.conn, NULL, 0, NULL, 0, "a\r\nb\rc\n", 7) == 0, "sent");
    CHECK(client_wait(&h, &c, 4096, has_text, "data: a\ndata: b\ndata: c\ndata: \n\n",
                      HARNESS_TIMEOUT_MS),
          "CRLF, CR and LF each end a line");
    CHECK(up_sse_any_send(app.conn, "bad\nname", 8, NULL, 0, "x", 1) == -2,
          "an event name with a line break is refused");
    CHECK(client_wait(&h, &c, 4096, has_text, ":\n\n", 3000), "a heartbeat after a second");
    client_close(&c);
    CHECK(harness_wait(&h, app_closed, NULL, HARNESS_TIMEOUT_MS), "the client's leaving is seen");
    harness_stop(&h);
}

/* Without Accept: text/event-stream the request is plain. */
static void test_plain_request_is_not_an_event_stream(void)
{
    harness_t h;
    start(&h);
    app.sse = 1;
    client_t c;
    client_open(&h, &c, "GET /events HTTP/1.1\r\nHost: t\r\nAccept: text/event-streams\r\n\r\n", 0);
    response_t res;
    CHECK(client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS) && res.status == 200 &&
              app.plain_requests == 1,
          "a plain 200");
    response_free(&res);
    client_close(&c);
    harness_stop(&h);
}

/* A client that pings and never reads: the pongs it does not take stay bounded, because the
 * server stops reading it (the rest of its pings wait in the kernel). */
typedef struct pinger_t {
    int fd;
    atomic_int stop;
    size_t sent;
    pthread_t thread;
} pinger_t;

static void *pinger_run(void *arg)
{
    pinger_t *p = arg;
    char ping[128];
    size_t n = masked(ping, 1, UP_WS_OP_PING, "0123456789012345678901234567890123456789"
                                               "0123456789012345678901234567890123456789"
                                               "0123456789012345678901234567890123456789",
                      120);
    while (!atomic_load(&p->stop)) {
        ssize_t r = send(p->fd, ping, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r > 0)
            p->sent += (size_t)r;
        else
            usleep(1000);
    }
    return NULL;
}

static void test_pongs_a_client_does_not_read_stay_bounded(void)
{
    harness_t h;
    start(&h);
    ws_client_t w;
    ws_open(&h, &w);
    for (int i = 0; i < 5 && app.conn == NULL; i++)
        harness_turn(&h, 1);
    pinger_t p = {w.c.fd, 0, 0, 0};
    pthread_create(&p.thread, NULL, pinger_run, &p);
    uint64_t max_backlog = 0;
    for (int i = 0; i < 1500; i++) {
        harness_turn(&h, 1);
        uint64_t b = up_conn_any_backlog(app.conn);
        if (b > max_backlog)
            max_backlog = b;
    }
    atomic_store(&p.stop, 1);
    pthread_join(p.thread, NULL);
    /* The limit, and the pongs of the reads that crossed it (a read buffer's worth each). */
    CHECK(max_backlog <= UP_CONN_BACKLOG_LIMIT + 2 * UP_BUFFER_CHUNK,
          "the server held %llu bytes of pongs after %zu bytes of pings",
          (unsigned long long)max_backlog, p.sent);
    client_close(&w.c);
    harness_stop(&h);
}

/* ---------------------------------------------------------------- permessage-deflate */

/* Raw DEFLATE of data with the trailing 00 00 ff ff taken off (RFC 7692 §7.2.1). */
static size_t deflate_message(const char *data, size_t len, char *out, size_t cap)
{
    z_stream z = {0};
    deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
    z.next_in = (Bytef *)data;
    z.avail_in = (uInt)len;
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)cap;
    deflate(&z, Z_SYNC_FLUSH);
    size_t n = cap - z.avail_out;
    deflateEnd(&z);
    return n - 4;
}

static size_t inflate_message(const char *data, size_t len, char *out, size_t cap)
{
    char *in = malloc(len + 4);
    memcpy(in, data, len);
    memcpy(in + len, "\x00\x00\xff\xff", 4);
    z_stream z = {0};
    inflateInit2(&z, -15);
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)(len + 4);
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)cap;
    inflate(&z, Z_SYNC_FLUSH);
    size_t n = cap - z.avail_out;
    inflateEnd(&z);
    free(in);
    return n;
}

static int deflate_opened(harness_t *h, ws_client_t *w)
{
    client_open(h, &w->c,
                "GET /chat HTTP/1.1\r\n" UPGRADE_HEADERS "Sec-WebSocket-Key: " KEY
                "\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n",
                0);
    response_t res;
    int ok = client_read_response(h, &w->c, &res, 1, HARNESS_TIMEOUT_MS) && res.status == 101 &&
             strstr(res.raw, "sec-websocket-extensions: permessage-deflate") != NULL;
    if (res.raw != NULL)
        response_free(&res);
    up_ws_reader_init(&w->reader, &frame_callbacks, &frame, 0,
                      UP_WS_READER_FROM_SERVER | UP_WS_READER_DEFLATE);
    return ok;
}

static void test_deflated_messages_both_ways(void)
{
    harness_t h;
    start(&h);
    up_ws_compressors_t *pool = up_ws_compressors_new();
    app.settings.compressors = pool;
    ws_client_t w;
    CHECK(deflate_opened(&h, &w), "the 101 names permessage-deflate");
    static char text[4096], z[8192], back[8192];
    for (size_t i = 0; i < sizeof(text); i++)
        text[i] = "the quick brown fox "[i % 20];
    size_t n = deflate_message(text, sizeof(text), z, sizeof(z));
    uint8_t header[UP_WS_MAX_HEADER];
    size_t hn = up_ws_frame_header_masked(header, 1, 1, UP_WS_OP_TEXT, n, mask_key);
    char *wire = malloc(hn + n);
    memcpy(wire, header, hn);
    memcpy(wire + hn, z, n);
    up_ws_mask(wire + hn, n, mask_key, 0);
    client_send(&h, &w.c, wire, hn + n);
    free(wire);
    CHECK(ws_read(&h, &w) && frame.opcode == UP_WS_OP_TEXT, "the echo came");
    size_t m = inflate_message(frame.payload, frame.len, back, sizeof(back));
    CHECK(frame.len < sizeof(text) && m == sizeof(text) && memcmp(back, text, m) == 0,
          "compressed (%zu bytes) and inflated back to the message", frame.len);
    CHECK(app.messages == 1, "the app got it whole and inflated");
    client_close(&w.c);
    harness_stop(&h);
    up_ws_compressors_free(pool);
}

/* A few KB that inflate to 100 MB: refused with 1009 once past the limit, never inflated
 * whole (the inflater stops at the limit). */
static void test_decompression_bomb_closes_1009(void)
{
    harness_t h;
    start(&h);
    up_ws_compressors_t *pool = up_ws_compressors_new();
    app.settings.compressors = pool;
    app.settings.max_message = 1 << 20;
    ws_client_t w;
    deflate_opened(&h, &w);
    z_stream zs = {0};
    deflateInit2(&zs, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY);
    static char zeros[1 << 20];
    static char z[1 << 18];
    zs.next_out = (Bytef *)z;
    zs.avail_out = sizeof(z);
    for (int i = 0; i < 100; i++) {
        zs.next_in = (Bytef *)zeros;
        zs.avail_in = sizeof(zeros);
        deflate(&zs, Z_NO_FLUSH);
    }
    deflate(&zs, Z_SYNC_FLUSH);
    size_t n = sizeof(z) - zs.avail_out - 4;
    deflateEnd(&zs);
    uint8_t header[UP_WS_MAX_HEADER];
    size_t hn = up_ws_frame_header_masked(header, 1, 1, UP_WS_OP_BINARY, n, mask_key);
    char *wire = malloc(hn + n);
    memcpy(wire, header, hn);
    memcpy(wire + hn, z, n);
    up_ws_mask(wire + hn, n, mask_key, 0);
    client_send(&h, &w.c, wire, hn + n);
    free(wire);
    CHECK(ws_read(&h, &w) && close_code_of_frame() == 1009, "%zu bytes that inflate to 100 MB: 1009",
          n);
    CHECK(app.messages == 0, "nothing handed to the app");
    client_close(&w.c);
    harness_stop(&h);
    up_ws_compressors_free(pool);
}

/* Without compressors the offer is declined: no extension in the 101, RSV1 refused. */
static void test_deflate_off_declines_the_offer(void)
{
    harness_t h;
    start(&h);
    ws_client_t w;
    CHECK(!deflate_opened(&h, &w), "no permessage-deflate in the 101");
    client_close(&w.c);
    harness_stop(&h);
}

int main(void)
{
    harness_watchdog(120);
    test_handshake_answers_101_and_opens();
    test_bad_handshakes_are_refused();
    test_messages_are_echoed_whole();
    test_frames_split_byte_by_byte();
    test_protocol_errors_close_with_their_code();
    test_message_over_the_limit_closes_1009();
    test_client_close_is_echoed();
    test_empty_close_is_answered_without_a_code();
    test_app_close_follows_its_messages();
    test_pending_and_drained();
    test_reading_stops_while_the_app_is_behind();
    test_idle_client_is_pinged_then_closed();
    test_pong_keeps_the_client();
    test_stop_calls_on_shutdown();
    test_event_stream_frames_events_and_beats();
    test_plain_request_is_not_an_event_stream();
    test_pongs_a_client_does_not_read_stay_bounded();
    test_deflated_messages_both_ways();
    test_decompression_bomb_closes_1009();
    test_deflate_off_declines_the_offer();
    return test_report("websocket");
}
