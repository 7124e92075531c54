/* The connection model for long-lived connections (conn.h): a connection that switched
 * protocol after a response is written by other threads through its mail while the loop reads
 * it; handles stay valid after a close; each producer waits on its own connection; a close
 * can be asked for from any thread; the read buffer is reused rather than grown; and a
 * protocol may have an idle timer of its own duration. Run under ASan (a handle used after its
 * memory went, a leak) and TSan (the mail list, the waiters). */

#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "engine_harness.h"
#include "test.h"

#define HOST "Host: t\r\n"

/* ---------------------------------------------------------------- a long-lived protocol */

/* After "GET /upgrade", the connection speaks "sink": it consumes (and counts) every byte the
 * client sends, writes nothing itself, and is written by other threads. */
typedef struct sink_t {
    size_t consumed;
    int closes, close_requests, timeouts;
    unsigned idle_ms; /* > 0: the idle timer it sets */
} sink_t;

static sink_t sinks[4];
static int next_sink;

static void sink_on_read(up_conn_t *conn)
{
    sink_t *s = conn->protocol_data;
    s->consumed += conn->_rbuf.len - conn->_rpos;
    conn->_rpos = conn->_rbuf.len;
    if (conn->eof) {
        up_conn_loop_close(conn);
        return;
    }
    up_conn_loop_want_read(conn, 1);
    if (s->idle_ms > 0)
        up_conn_loop_set_idle_timer(conn, s->idle_ms);
}

static void sink_on_nothing(up_conn_t *conn)
{
    (void)conn;
}

static void sink_on_start(up_conn_t *conn)
{
    sink_t *s = conn->protocol_data;
    if (s->idle_ms > 0)
        up_conn_loop_set_idle_timer(conn, s->idle_ms);
}

static void sink_on_timeout(up_conn_t *conn)
{
    ((sink_t *)conn->protocol_data)->timeouts++;
    up_conn_loop_close(conn);
}

static void sink_on_close_request(up_conn_t *conn)
{
    ((sink_t *)conn->protocol_data)->close_requests++;
    up_conn_loop_close_after_output(conn);
}

static void sink_on_close(up_conn_t *conn)
{
    ((sink_t *)conn->protocol_data)->closes++;
}

static const up_protocol_t sink_protocol = {
    .name = "sink",
    .on_read = sink_on_read,
    .on_start = sink_on_start,
    .on_drained = sink_on_nothing,
    .on_resume = sink_on_nothing,
    .on_timeout = sink_on_timeout,
    .on_stop = up_conn_loop_close,
    .on_close_request = sink_on_close_request,
    .on_notify = sink_on_nothing,
    .on_close = sink_on_close,
};

static up_request_result_t on_request(up_exchange_t *ex, void *user)
{
    (void)user;
    up_response_start(ex, 101);
    up_response_add_header(ex, "upgrade", 7, "sink", 4);
    up_response_add_header(ex, "connection", 10, "upgrade", 7);
    up_response_end_head(ex, -1);
    sink_t *s = &sinks[next_sink++];
    up_http1_switch_protocol(ex, &sink_protocol, s);
    return UP_REQUEST_DONE;
}

static void start(harness_t *h)
{
    memset(sinks, 0, sizeof(sinks));
    next_sink = 0;
    up_server_handler_t handler = {.on_request = on_request};
    harness_start(h, NULL, &handler);
}

/* Opens a client and switches it to the sink protocol; returns its connection. */
static up_conn_t *open_sink(harness_t *h, client_t *c, int server_sndbuf)
{
    client_open(h, c, "GET /upgrade HTTP/1.1\r\n" HOST "\r\n", server_sndbuf);
    response_t res;
    CHECK(client_read_response(h, c, &res, 0, HARNESS_TIMEOUT_MS) && res.status == 101,
          "switched to the sink protocol");
    response_free(&res);
    return c->conn;
}

/* Posts len bytes to conn from this thread. */
static int post_bytes(harness_t *h, up_conn_t *conn, const void *data, size_t len)
{
    up_outq_t out;
    up_outq_init(&out);
    up_outq_append(&out, &h->server->pool, data, len);
    return up_conn_any_post(conn, &out);
}

/* ---------------------------------------------------------------- the read buffer */

/* After a switch, a protocol that consumes everything it is given keeps one buffer chunk,
 * however much comes: a full buffer whose bytes are all consumed is reused, not doubled. */
static void test_read_buffer_is_reused_not_grown(void)
{
    harness_t h;
    start(&h);
    client_t c;
    up_conn_t *conn = open_sink(&h, &c, 0);
    static char block[65536];
    memset(block, 'x', sizeof(block));
    size_t sent = 0, max_cap = 0;
    while (sent < 4u * 1024 * 1024) {
        CHECK(client_send(&h, &c, block, sizeof(block)) == 0, "sent");
        sent += sizeof(block);
        harness_turn(&h, 0);
        if (conn->_rbuf.cap > max_cap)
            max_cap = conn->_rbuf.cap;
    }
    for (int i = 0; i < 100 && sinks[0].consumed < sent; i++)
        harness_turn(&h, 10);
    CHECK(sinks[0].consumed == sent, "consumed %zu of %zu", sinks[0].consumed, sent);
    CHECK(max_cap <= UP_BUFFER_CHUNK, "the read buffer grew to %zu bytes", max_cap);
    client_close(&c);
    harness_stop(&h);
}

/* ---------------------------------------------------------------- handles */

static int sink_closed(void *arg)
{
    return ((sink_t *)arg)->closes == 1;
}

/* A reference taken before the close keeps the memory: the connection reports itself closed
 * and refuses posts and close requests, and the last release frees it (ASan checks both). */
static void test_handle_outlives_the_close(void)
{
    harness_t h;
    start(&h);
    client_t c;
    up_conn_t *conn = open_sink(&h, &c, 0);
    up_conn_retain(conn);
    client_hang_up(&c);
    CHECK(harness_wait(&h, sink_closed, &sinks[0], HARNESS_TIMEOUT_MS), "closed by the loop");
    CHECK(up_conn_any_state(conn) == UP_CONN_CLOSED && up_conn_any_broken(conn), "reads CLOSED");
    CHECK(post_bytes(&h, conn, "late", 4) == -1, "a post after the close is refused");
    CHECK(up_conn_any_request_close(conn) == -1, "and so is a close request");
    CHECK(up_conn_any_backlog(conn) == 0, "nothing was counted");
    harness_stop(&h); /* the server's memory waits for the last connection reference */
    up_conn_release(conn);
    client_close(&c);
}

/* ---------------------------------------------------------------- posting from threads */

#define POSTS 2000

typedef struct poster_t {
    harness_t *h;
    up_conn_t *conn;
    char tag;
    int refused;
    pthread_t thread;
} poster_t;

static void *poster_run(void *arg)
{
    poster_t *p = arg;
    for (int i = 0; i < POSTS; i++) {
        char line[16];
        int n = snprintf(line, sizeof(line), "%c%05d\n", p->tag, i);
        if (post_bytes(p->h, p->conn, line, (size_t)n) != 0)
            p->refused++;
    }
    return NULL;
}

static int all_lines_in(client_t *c, void *arg)
{
    return c->len - *(size_t *)arg >= 2u * POSTS * 7; /* arg: where the lines begin */
}

/* Two threads post numbered lines while the loop runs on this one: every line arrives once,
 * each thread's in its order (the mail keeps posting order per connection). */
static void test_posts_from_two_threads_arrive_in_order(void)
{
    harness_t h;
    start(&h);
    client_t c;
    up_conn_t *conn = open_sink(&h, &c, 4096);
    size_t head = c.len;
    poster_t a = {&h, conn, 'a', 0, 0}, b = {&h, conn, 'b', 0, 0};
    pthread_create(&a.thread, NULL, poster_run, &a);
    pthread_create(&b.thread, NULL, poster_run, &b);
    CHECK(client_wait(&h, &c, 512, all_lines_in, &head, HARNESS_TIMEOUT_MS), "every line came");
    pthread_join(a.thread, NULL);
    pthread_join(b.thread, NULL);
    CHECK(a.refused == 0 && b.refused == 0, "no post refused");
    int next[2] = {0, 0}, bad = 0;
    for (size_t at = head; at + 7 <= c.len; at += 7) {
        int which = c.in[at] == 'a' ? 0 : c.in[at] == 'b' ? 1 : -1;
        int n = which < 0 ? -1 : atoi(c.in + at + 1);
        if (which < 0 || n != next[which]++ || c.in[at + 6] != '\n')
            bad++;
    }
    CHECK(bad == 0 && next[0] == POSTS && next[1] == POSTS,
          "%d lines out of order; %d and %d of %d", bad, next[0], next[1], POSTS);
    CHECK(up_conn_any_backlog(conn) == 0, "the backlog is back to 0, not %llu (%llu queued)",
          (unsigned long long)up_conn_any_backlog(conn), (unsigned long long)conn->_out.bytes);
    client_close(&c);
    harness_stop(&h);
}

/* ---------------------------------------------------------------- waiters */

typedef struct producer_t {
    harness_t *h;
    up_conn_t *conn;
    atomic_int posted, returned, result;
    atomic_int cancel;
    pthread_t thread;
} producer_t;

#define FLOOD (1024 * 1024)
#define WAIT_BELOW (64 * 1024)

static void *producer_run(void *arg)
{
    producer_t *p = arg;
    static char big[FLOOD];
    post_bytes(p->h, p->conn, big, sizeof(big));
    atomic_store(&p->posted, 1);
    atomic_store(&p->result, up_conn_any_wait_backlog(p->conn, WAIT_BELOW, &p->cancel));
    atomic_store(&p->returned, 1);
    return NULL;
}

static int returned(void *arg)
{
    return atomic_load(&((producer_t *)arg)->returned);
}

/* Two producers flood two connections whose clients do not read, and wait for their own
 * backlog. One client reads everything: its producer goes on; the other's stays waiting, until
 * its client leaves (then its wait fails). */
static void test_each_producer_waits_for_its_own_connection(void)
{
    harness_t h;
    start(&h);
    client_t ca, cb;
    producer_t a = {.h = &h}, b = {.h = &h};
    a.conn = open_sink(&h, &ca, 4096);
    b.conn = open_sink(&h, &cb, 4096);
    up_conn_retain(a.conn); /* the threads' handles: b's connection closes under its thread */
    up_conn_retain(b.conn);
    pthread_create(&a.thread, NULL, producer_run, &a);
    pthread_create(&b.thread, NULL, producer_run, &b);
    for (int i = 0; i < 200 && !(atomic_load(&a.posted) && atomic_load(&b.posted)); i++)
        harness_turn(&h, 5);
    /* a's client reads it all; b's reads nothing. */
    uint64_t deadline = harness_now_ms() + HARNESS_TIMEOUT_MS;
    while (!atomic_load(&a.returned) && harness_now_ms() < deadline)
        client_pump(&h, &ca, 65536);
    CHECK(atomic_load(&a.returned) && atomic_load(&a.result) == 0, "a's wait ended with success");
    for (int i = 0; i < 20; i++)
        harness_turn(&h, 5);
    CHECK(!atomic_load(&b.returned), "b still waits: its client took nothing");
    CHECK(up_conn_any_backlog(b.conn) > WAIT_BELOW, "b's backlog is %llu",
          (unsigned long long)up_conn_any_backlog(b.conn));
    client_hang_up(&cb);
    CHECK(harness_wait(&h, returned, &b, HARNESS_TIMEOUT_MS), "b's wait ends when its client left");
    CHECK(atomic_load(&b.result) == -1, "and reports the client gone");
    pthread_join(a.thread, NULL);
    pthread_join(b.thread, NULL);
    up_conn_release(a.conn);
    up_conn_release(b.conn);
    client_close(&ca);
    client_close(&cb);
    harness_stop(&h);
}

/* A waiter whose cancel flag is set is woken by up_conn_any_cancel_waits (a binding's
 * interrupt), whatever the backlog. */
static void test_a_cancelled_wait_returns(void)
{
    harness_t h;
    start(&h);
    client_t c;
    producer_t p = {.h = &h};
    p.conn = open_sink(&h, &c, 4096);
    pthread_create(&p.thread, NULL, producer_run, &p);
    for (int i = 0; i < 200 && !atomic_load(&p.posted); i++)
        harness_turn(&h, 5);
    for (int i = 0; i < 10; i++)
        harness_turn(&h, 5);
    CHECK(!atomic_load(&p.returned), "waiting for a client that does not read");
    atomic_store(&p.cancel, 1);
    up_conn_any_cancel_waits(p.conn);
    CHECK(harness_wait(&h, returned, &p, HARNESS_TIMEOUT_MS), "the cancelled wait returned");
    CHECK(atomic_load(&p.result) == 0, "not a failure: the client is still there");
    pthread_join(p.thread, NULL);
    client_close(&c);
    harness_stop(&h);
}

/* ---------------------------------------------------------------- close requests */

typedef struct closer_t {
    harness_t *h;
    up_conn_t *conn;
    int post_result, close_result;
} closer_t;

static void *closer_run(void *arg)
{
    closer_t *c = arg;
    c->post_result = post_bytes(c->h, c->conn, "last words\n", 11);
    c->close_result = up_conn_any_request_close(c->conn);
    return NULL;
}

static int has_eof(client_t *c, void *arg)
{
    (void)arg;
    return c->eof;
}

/* A close asked for from another thread comes after what it posted before: the client reads
 * those bytes, then the end, and the protocol closed its own way (on_close_request). */
static void test_close_request_from_another_thread_follows_its_posts(void)
{
    harness_t h;
    start(&h);
    client_t c;
    closer_t closer = {&h, open_sink(&h, &c, 0), -2, -2};
    size_t head = c.len;
    pthread_t t;
    pthread_create(&t, NULL, closer_run, &closer);
    pthread_join(t, NULL);
    CHECK(closer.post_result == 0 && closer.close_result == 0, "post %d, close %d",
          closer.post_result, closer.close_result);
    client_shut_write(&c); /* the lingering close ends when the client does */
    CHECK(client_wait(&h, &c, 4096, has_eof, NULL, HARNESS_TIMEOUT_MS), "the server closed");
    CHECK(c.len - head == 11 && memcmp(c.in + head, "last words\n", 11) == 0,
          "the posted bytes came first: %.*s", (int)(c.len - head), c.in + head);
    CHECK(sinks[0].close_requests == 1, "the protocol was asked once");
    CHECK(harness_wait(&h, sink_closed, &sinks[0], HARNESS_TIMEOUT_MS), "and closed");
    client_close(&c);
    harness_stop(&h);
}

/* ---------------------------------------------------------------- idle timers */

static int timed_out(void *arg)
{
    return ((sink_t *)arg)->timeouts == 1;
}

/* Two connections with idle timers of their own durations (1 s and 2 s; the loop looks at
 * timers once a second): the shorter fires first, the other later, each on its own. */
static void test_idle_timers_of_different_durations(void)
{
    harness_t h;
    start(&h);
    sinks[0].idle_ms = 1000;
    sinks[1].idle_ms = 2000;
    client_t ca, cb;
    open_sink(&h, &ca, 0);
    open_sink(&h, &cb, 0);
    uint64_t t0 = harness_now_ms();
    CHECK(harness_wait(&h, timed_out, &sinks[0], 4000), "the 1 s timer fired");
    uint64_t first = harness_now_ms() - t0;
    CHECK(sinks[1].timeouts == 0, "the 2 s one had not, after %llu ms", (unsigned long long)first);
    CHECK(harness_wait(&h, timed_out, &sinks[1], 4000), "the 2 s timer fired");
    uint64_t second = harness_now_ms() - t0;
    /* The loop reads a coarse clock (a few ms behind this one). */
    CHECK(first >= 950 && second >= 1950 && second - first >= 950, "after %llu and %llu ms",
          (unsigned long long)first, (unsigned long long)second);
    client_close(&ca);
    client_close(&cb);
    harness_stop(&h);
}

/* Past UP_MAX_IDLE_DURATIONS distinct durations, a new one shares the nearest list. */
static void test_idle_timer_lists_are_bounded(void)
{
    harness_t h;
    start(&h);
    up_timer_list_t *first = up_server_idle_timers(h.server, 1000);
    CHECK(up_server_idle_timers(h.server, 1000) == first, "one list per duration");
    for (unsigned i = 1; i < UP_MAX_IDLE_DURATIONS; i++)
        up_server_idle_timers(h.server, 1000 + i * 1000);
    up_timer_list_t *near = up_server_idle_timers(h.server, 5400);
    CHECK(near->duration_ms == 5000, "5.4 s shares the 5 s list: %llu",
          (unsigned long long)near->duration_ms);
    CHECK(h.server->num_idle_timers == UP_MAX_IDLE_DURATIONS, "%d lists",
          h.server->num_idle_timers);
    harness_stop(&h);
}

int main(void)
{
    harness_watchdog(120);
    test_read_buffer_is_reused_not_grown();
    test_handle_outlives_the_close();
    test_posts_from_two_threads_arrive_in_order();
    test_each_producer_waits_for_its_own_connection();
    test_a_cancelled_wait_returns();
    test_close_request_from_another_thread_follows_its_posts();
    test_idle_timers_of_different_durations();
    test_idle_timer_lists_are_bounded();
    return test_report("conn_threads");
}
