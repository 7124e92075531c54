/* Pub/sub inside a server (pubsub.c): Redis' glob rules for patterns (a table, each case also
 * against every prefix of its string), and the fan-out over socketpairs: WebSocket subscribers
 * get every message once, in publish order, as text or binary frames, pattern subscribers too;
 * event-stream subscribers get data events; callback subscribers get the bytes; a subscriber
 * too far behind is closed with 1008 while the others go on; publishes from several threads at
 * once lose nothing (run under TSan too). */

#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "engine_harness.h"
#include "pubsub/pubsub.h"
#include "sse/sse.h"
#include "test.h"
#include "websocket/websocket.h"

/* ---------------------------------------------------------------- glob */

typedef struct glob_case_t {
    const char *pattern, *str;
    int match;
} glob_case_t;

static const glob_case_t globs[] = {
    {"news.*", "news.art", 1},
    {"news.*", "news.", 1},
    {"news.*", "news", 0},
    {"*", "", 1},
    {"*", "anything", 1},
    {"h?llo", "hello", 1},
    {"h?llo", "hllo", 0},
    {"h*llo", "hllo", 1},
    {"h*llo", "heeeello", 1},
    {"h[ae]llo", "hallo", 1},
    {"h[ae]llo", "hillo", 0},
    {"h[^e]llo", "hallo", 1},
    {"h[^e]llo", "hello", 0},
    {"h[a-b]llo", "hbllo", 1},
    {"h[a-b]llo", "hcllo", 0},
    {"h[b-a]llo", "hallo", 1}, /* a reversed range, as Redis takes it */
    {"h\\*llo", "h*llo", 1},
    {"h\\*llo", "hello", 0},
    {"h[\\]]llo", "h]llo", 1},
    {"a*b*c", "abc", 1},
    {"a*b*c", "aXbYc", 1},
    {"a*b*c", "aXbY", 0},
    {"*.*.*", "a.b.c", 1},
    {"*.*.*", "a.b", 0},
    {"", "", 1},
    {"", "a", 0},
    {"abc", "abc", 1},
    {"abc", "abcd", 0},
    {"[abc", "b", 1}, /* an unclosed class runs to the end */
    {"**a", "bba", 1},
    {"user.*.messages", "user.42.messages", 1},
    {"user.*.messages", "user.42.notes", 0},
};

/* A pattern that a naive recursive matcher takes exponential time on: bounded here. */
static void test_glob(void)
{
    for (size_t i = 0; i < sizeof(globs) / sizeof(globs[0]); i++) {
        const glob_case_t *g = &globs[i];
        size_t plen = strlen(g->pattern), slen = strlen(g->str);
        char *p = guarded_copy(g->pattern, plen), *s = guarded_copy(g->str, slen);
        CHECK(up_glob_match(p, plen, s, slen) == g->match, "'%s' ~ '%s' should be %d", g->pattern,
              g->str, g->match);
        guarded_free(p, plen);
        guarded_free(s, slen);
    }
    char pattern[64], str[64];
    memset(pattern, 0, sizeof(pattern));
    for (int i = 0; i < 30; i++)
        strcat(pattern, "*a");
    strcat(pattern, "b");
    memset(str, 'a', 60);
    str[60] = '\0';
    CHECK(!up_glob_match(pattern, strlen(pattern), str, strlen(str)),
          "a pathological pattern ends (and does not match)");
}

/* ---------------------------------------------------------------- the server */

#define KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define WS_REQUEST                                                                              \
    "GET / HTTP/1.1\r\nHost: t\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"               \
    "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " KEY "\r\n\r\n"

typedef struct world_t {
    up_pubsub_t *ps;
    up_conn_t *conns[16];
    int num_conns;
    int logs;
    char got[64][64];
    int num_got;
} world_t;

static world_t world;

static void on_open(up_conn_t *conn, void *user)
{
    (void)user;
    world.conns[world.num_conns++] = conn;
}

static void on_message_ignore(up_conn_t *conn, void *user, up_upgrade_message_t *msg)
{
    (void)conn;
    (void)user;
    free(msg);
}

static const up_upgrade_events_t events = {on_open, on_message_ignore, NULL, NULL, NULL};

static up_request_result_t on_request(up_exchange_t *ex, void *user)
{
    (void)user;
    up_ws_settings_t settings = {1 << 20, 0, NULL};
    if (ex->req->upgrade == UP_UPGRADE_WEBSOCKET) {
        up_ws_t *ws = up_ws_lent_start_accept(ex, &settings);
        up_conn_release(up_ws_lent_accept(ex, ws, &events, NULL));
    } else {
        up_sse_lent_start_accept(ex);
        up_conn_release(up_sse_lent_accept(ex, 0, &events, NULL));
    }
    return UP_REQUEST_DONE;
}

static void on_callback_message(void *user, const char *channel, size_t channel_len,
                                up_shared_t *message)
{
    (void)user;
    if (world.num_got < 64)
        snprintf(world.got[world.num_got++], 64, "%.*s=%.*s", (int)channel_len, channel,
                 (int)message->len, message->base);
}

static void on_log(void *data, const char *message)
{
    (void)data;
    (void)message;
    world.logs++;
}

static void start(harness_t *h, uint64_t max_pending)
{
    memset(&world, 0, sizeof(world));
    up_server_handler_t handler = {.on_request = on_request};
    harness_start(h, NULL, &handler);
    up_pubsub_callbacks_t cb = {on_callback_message, on_log, NULL};
    world.ps = up_pubsub_new(h->server, max_pending, &cb);
}

static void stop(harness_t *h)
{
    harness_stop(h);
    up_pubsub_free(world.ps);
}

static up_conn_t *open_ws(harness_t *h, client_t *c, int server_sndbuf)
{
    int before = world.num_conns;
    client_open(h, c, WS_REQUEST, server_sndbuf);
    response_t res;
    CHECK(client_read_response(h, c, &res, 1, HARNESS_TIMEOUT_MS) && res.status == 101, "101");
    response_free(&res);
    for (int i = 0; i < 10 && world.num_conns == before; i++)
        harness_turn(h, 1);
    return world.conns[before];
}

/* Reads server frames from c into out ("T:payload" per text frame, "B:..." binary, "C:code"). */
static int frames(harness_t *h, client_t *c, char out[][64], int want)
{
    int n = 0;
    uint64_t deadline = harness_now_ms() + HARNESS_TIMEOUT_MS;
    while (n < want && harness_now_ms() < deadline) {
        client_pump(h, c, 1 << 20);
        while (c->len - c->pos >= 2 && n < want) {
            unsigned char *b = (unsigned char *)c->in + c->pos;
            size_t len = b[1] & 0x7f;
            if (len > 125 || c->len - c->pos < 2 + len)
                break;
            int op = b[0] & 0x0f;
            if (op == UP_WS_OP_CLOSE)
                snprintf(out[n++], 64, "C:%d", len >= 2 ? (b[2] << 8) | b[3] : 0);
            else
                snprintf(out[n++], 64, "%c:%.*s", op == UP_WS_OP_TEXT ? 'T' : 'B', (int)len,
                         (char *)b + 2);
            c->pos += 2 + len;
        }
    }
    return n;
}

static void subscribe(up_conn_t *conn, const char *channel, int pattern, up_pubsub_delivery_t d)
{
    void *replaced;
    int first;
    CHECK(up_pubsub_any_subscribe(world.ps, conn, channel, strlen(channel), pattern, d, NULL,
                                  &replaced, &first) == 0,
          "subscribed to %s", channel);
}

static void publish(const char *channel, const char *message)
{
    up_pubsub_any_publish(world.ps, channel, strlen(channel), message, strlen(message));
}

static void test_fan_out_to_channels_and_patterns(void)
{
    harness_t h;
    start(&h, 0);
    client_t a, b, c;
    up_conn_t *ca = open_ws(&h, &a, 0), *cb = open_ws(&h, &b, 0), *cc = open_ws(&h, &c, 0);
    subscribe(ca, "news", 0, UP_PUBSUB_WS_TEXT);
    subscribe(cb, "news", 0, UP_PUBSUB_WS_BINARY);
    subscribe(cc, "n?ws", 1, UP_PUBSUB_WS_TEXT);
    subscribe(cc, "other", 0, UP_PUBSUB_WS_TEXT);
    publish("news", "one");
    publish("nope", "lost");
    publish("news", "two");
    publish("other", "three");
    char got[8][64];
    CHECK(frames(&h, &a, got, 2) == 2 && strcmp(got[0], "T:one") == 0 && strcmp(got[1], "T:two") == 0,
          "the channel's subscriber gets both, in order, as text");
    CHECK(frames(&h, &b, got, 2) == 2 && strcmp(got[0], "B:one") == 0 && strcmp(got[1], "B:two") == 0,
          "as binary when asked");
    CHECK(frames(&h, &c, got, 3) == 3 && strcmp(got[0], "T:one") == 0 &&
              strcmp(got[1], "T:two") == 0 && strcmp(got[2], "T:three") == 0,
          "the pattern's subscriber gets them too, each once");
    up_pubsub_stats_t st;
    up_pubsub_any_stats(world.ps, &st);
    CHECK(st.published == 4 && st.delivered == 7 && st.subscriptions == 4,
          "published %llu, delivered %llu, subscriptions %llu", (unsigned long long)st.published,
          (unsigned long long)st.delivered, (unsigned long long)st.subscriptions);
    /* Unsubscribed: no more. Subscribing again replaces. */
    int last;
    up_pubsub_any_unsubscribe(world.ps, ca, "news", 4, 0, NULL, &last);
    CHECK(!last, "b still listens to news");
    subscribe(cb, "news", 0, UP_PUBSUB_WS_TEXT);
    publish("news", "four");
    CHECK(frames(&h, &b, got, 1) == 1 && strcmp(got[0], "T:four") == 0, "replaced: text, once");
    publish("news", "\xff");
    CHECK(frames(&h, &b, got, 1) == 1 && strcmp(got[0], "B:\xff") == 0,
          "bytes that are not UTF-8 go as binary even to a text subscriber");
    for (int i = 0; i < 5; i++)
        harness_turn(&h, 1);
    CHECK(frames(&h, &a, got, 1) == 0, "unsubscribed: nothing");
    client_close(&a);
    client_close(&b);
    client_close(&c);
    stop(&h);
}

static void test_event_stream_and_callback_subscribers(void)
{
    harness_t h;
    start(&h, 0);
    client_t s;
    client_open(&h, &s, "GET /e HTTP/1.1\r\nHost: t\r\nAccept: text/event-stream\r\n\r\n", 0);
    for (int i = 0; i < 10 && world.num_conns == 0; i++)
        harness_turn(&h, 1);
    subscribe(world.conns[0], "room", 0, UP_PUBSUB_SSE);
    void *replaced;
    int first;
    up_pubsub_any_subscribe(world.ps, NULL, "ro*", 3, 1, UP_PUBSUB_CALLBACK, &world, &replaced,
                            &first);
    CHECK(first, "the first subscription to the pattern");
    publish("room", "hi\nthere");
    for (int i = 0; i < 20; i++)
        client_pump(&h, &s, 4096);
    s.in[s.len] = '\0';
    CHECK(strstr(s.in, "data: hi\ndata: there\n\n") != NULL, "a data event, a line a line: %s",
          s.in);
    CHECK(world.num_got == 1 && strcmp(world.got[0], "room=hi\nthere") == 0,
          "the callback subscriber got channel and message");
    client_close(&s);
    stop(&h);
}

/* A subscriber that reads nothing gets its Close (1008) once max_pending is passed; the other
 * gets every message meanwhile. */
static void test_slow_subscriber_is_closed_and_others_go_on(void)
{
    harness_t h;
    start(&h, 64 * 1024);
    client_t slow, fast;
    up_conn_t *cs = open_ws(&h, &slow, 4096), *cf = open_ws(&h, &fast, 0);
    subscribe(cs, "feed", 0, UP_PUBSUB_WS_BINARY);
    subscribe(cf, "feed", 0, UP_PUBSUB_WS_BINARY);
    static char big[100];
    memset(big, 'z', sizeof(big) - 1);
    size_t fast_bytes = 0;
    for (int i = 0; i < 3000; i++) {
        publish("feed", big);
        if (i % 50 == 0) {
            harness_turn(&h, 0);
            fast_bytes += client_read_some(&fast, SIZE_MAX);
        }
    }
    for (int i = 0; i < 100; i++) {
        harness_turn(&h, 1);
        fast_bytes += client_read_some(&fast, SIZE_MAX);
    }
    CHECK(fast_bytes == 3000u * 101, "the fast one got all 3000 frames: %zu bytes", fast_bytes);
    CHECK(world.logs == 1, "the slow one was closed once, with a log line: %d", world.logs);
    CHECK(up_conn_any_backlog(cs) <= 64 * 1024 + 200, "its memory stayed bounded: %llu",
          (unsigned long long)up_conn_any_backlog(cs));
    /* It reads now: its backlog, then the 1008. */
    size_t before = slow.len;
    for (int i = 0; i < 200 && !slow.eof; i++)
        client_pump(&h, &slow, SIZE_MAX);
    CHECK(slow.len > before && memchr(slow.in, 0x88, slow.len) != NULL, "a Close came");
    client_close(&slow);
    client_close(&fast);
    stop(&h);
}

/* ---------------------------------------------------------------- threads */

typedef struct publisher_t {
    int id;
    pthread_t thread;
} publisher_t;

#define PER_THREAD 500

static void *publisher_run(void *arg)
{
    publisher_t *p = arg;
    for (int i = 0; i < PER_THREAD; i++) {
        char msg[32];
        snprintf(msg, sizeof(msg), "%d:%d", p->id, i);
        publish("t", msg);
    }
    return NULL;
}

static void test_publishes_from_threads_each_arrive_once_in_order(void)
{
    harness_t h;
    start(&h, 0);
    client_t c;
    up_conn_t *conn = open_ws(&h, &c, 0);
    subscribe(conn, "t", 0, UP_PUBSUB_WS_TEXT);
    publisher_t ps[3] = {{0, 0}, {1, 0}, {2, 0}};
    for (int i = 0; i < 3; i++)
        pthread_create(&ps[i].thread, NULL, publisher_run, &ps[i]);
    static char got[3 * PER_THREAD][64];
    int n = frames(&h, &c, got, 3 * PER_THREAD);
    for (int i = 0; i < 3; i++)
        pthread_join(ps[i].thread, NULL);
    int next[3] = {0, 0, 0}, bad = 0;
    for (int i = 0; i < n; i++) {
        int id, seq;
        if (sscanf(got[i], "T:%d:%d", &id, &seq) != 2 || id < 0 || id > 2 || seq != next[id]++)
            bad++;
    }
    CHECK(n == 3 * PER_THREAD && bad == 0, "%d of %d, %d out of order", n, 3 * PER_THREAD, bad);
    client_close(&c);
    stop(&h);
}

int main(void)
{
    harness_watchdog(120);
    test_glob();
    test_fan_out_to_channels_and_patterns();
    test_event_stream_and_callback_subscribers();
    test_slow_subscriber_is_closed_and_others_go_on();
    test_publishes_from_threads_each_arrive_once_in_order();
    return test_report("pubsub");
}
