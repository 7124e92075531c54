/* Handing a connection's socket over to the thread it is lent to (conn.h, "Hijack"): Rack's
 * full and partial hijack and an upgrade the app speaks itself. The output queued before the
 * hand-over is on the wire first, however slowly the client reads; the bytes the client sent
 * after the request go with the socket; a hijacked connection no longer counts for the server
 * (a graceful stop does not wait for it) and its memory goes when the exchange is returned; a
 * client gone before the hand-over, a borrower that gives up, a socket never taken and a
 * transport that cannot give its socket up all end closed, never leaked. The borrower is
 * another thread, as in the binding: run under ASan (leaks, use after free) and TSan (the
 * hand-over between the loop and the borrower). */

#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "engine_harness.h"
#include "test.h"

#define HOST "Host: t\r\n"

/* ---------------------------------------------------------------- the borrower */

/* What the borrower thread does with a request lent to it. */
typedef struct hijacker_t {
    up_exchange_t *ex;
    up_conn_t *conn;
    size_t head_pad;      /* > 0: a partial hijack: a 200 head with this many bytes of x-pad */
    int no_wait;          /* give the exchange back right after asking for the socket */
    int leave_socket;     /* wait for the hand-over but never take the socket */
    int echo;             /* after the socket: write "unread=...\n", then echo until EOF */
    int stop_after_taking; /* keep the exchange until `go`: the test looks in between */
    pthread_t thread;
    atomic_int go, done, cancel;
    atomic_int returned; /* set before the exchange goes back: conn is not ours after that */
    /* What it saw, read by the test after `done`. */
    int hijack_result;
    int fd;              /* what up_conn_lent_take_socket returned last */
    int took_after_wait; /* the first take said "under way" */
    int post_after;      /* up_conn_lent_post once the socket was taken */
    char unread[64];
    size_t echoed;
} hijacker_t;

static hijacker_t *current;

/* Writes all of len bytes to a non-blocking fd. Returns 0, or -1. */
static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            struct pollfd pfd = {fd, POLLOUT, 0};
            if (poll(&pfd, 1, HARNESS_TIMEOUT_MS) <= 0)
                return -1;
            continue;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static void echo_until_eof(hijacker_t *h)
{
    char buf[4096];
    int n = snprintf(buf, sizeof(buf), "unread=%s\n", h->unread);
    if (write_all(h->fd, buf, (size_t)n) != 0)
        return;
    for (;;) {
        struct pollfd pfd = {h->fd, POLLIN, 0};
        if (poll(&pfd, 1, HARNESS_TIMEOUT_MS) <= 0)
            return;
        ssize_t got = read(h->fd, buf, sizeof(buf));
        if (got <= 0)
            return;
        if (write_all(h->fd, buf, (size_t)got) != 0)
            return;
        h->echoed += (size_t)got;
    }
}

static void *hijacker_run(void *arg)
{
    hijacker_t *h = arg;
    up_exchange_t *ex = h->ex;
    up_conn_t *conn = ex->conn;
    if (h->head_pad > 0) {
        char *pad = malloc(h->head_pad);
        memset(pad, 'p', h->head_pad);
        up_response_start(ex, 200);
        up_response_add_header(ex, "x-pad", 5, pad, h->head_pad);
        up_response_end_head(ex, UP_RESPONSE_OPEN_STREAM);
        free(pad);
    }
    up_slice_t unread = up_http1_lent_unread(ex);
    snprintf(h->unread, sizeof(h->unread), "%.*s", (int)unread.len, unread.base);
    /* A partial hijack goes through the response writer (its head can no longer be undone). */
    h->hijack_result = h->head_pad > 0 ? up_response_hijack(ex) : up_conn_lent_hijack(conn);
    if (h->hijack_result > 0)
        up_loop_wake(conn->server->loop);
    h->fd = -1;
    if (h->hijack_result >= 0 && !h->no_wait) {
        for (;;) {
            h->fd = h->leave_socket && up_conn_any_state(conn) == UP_CONN_HIJACKED
                        ? -3
                        : up_conn_lent_take_socket(conn);
            if (h->fd != -2)
                break;
            h->took_after_wait = 1;
            up_conn_lent_wait_hijack(conn, &h->cancel);
            if (atomic_load(&h->cancel))
                break;
        }
    }
    if (h->fd >= 0)
        h->post_after = up_conn_lent_post(conn);
    if (h->stop_after_taking) {
        while (!atomic_load(&h->go) && !atomic_load(&h->cancel))
            usleep(1000);
    }
    /* The app call is over: the exchange goes back while the socket lives on (Action Cable
     * keeps it after its call returns). */
    atomic_store(&h->returned, 1);
    up_conn_lent_return(conn);
    if (h->fd >= 0 && h->echo)
        echo_until_eof(h);
    if (h->fd >= 0)
        close(h->fd);
    atomic_store(&h->done, 1);
    return NULL;
}

static up_request_result_t on_request(up_exchange_t *ex, void *user)
{
    (void)user;
    hijacker_t *h = current;
    h->ex = ex;
    h->conn = ex->conn;
    if (pthread_create(&h->thread, NULL, hijacker_run, h) != 0) {
        perror("pthread_create");
        exit(2);
    }
    return UP_REQUEST_DEFERRED;
}

static void start(harness_t *h, hijacker_t *hj)
{
    memset(hj, 0, sizeof(*hj));
    current = hj;
    up_server_handler_t handler = {.on_request = on_request};
    harness_start(h, NULL, &handler);
}

/* Joins the borrower, cancelling a wait that outlived the test. A connection the borrower has
 * not returned is not freed, and one it returns now is freed only by a loop turn, which this
 * thread runs: so conn is still there for the cancel. */
static void finish(hijacker_t *hj)
{
    atomic_store(&hj->cancel, 1);
    if (!atomic_load(&hj->returned))
        up_conn_any_cancel_waits(hj->conn);
    pthread_join(hj->thread, NULL);
}

static int is_done(void *arg)
{
    return atomic_load(&((hijacker_t *)arg)->done);
}

static int state_is_hijacked(void *arg)
{
    return up_conn_any_state(((hijacker_t *)arg)->conn) == UP_CONN_HIJACKED;
}

static int no_conns(void *arg)
{
    return up_server_num_conns(((harness_t *)arg)->server) == 0;
}

/* Turns the loop until the client has seen s (after what it had consumed), or its end. */
static int wait_for_text(harness_t *h, client_t *c, const char *s)
{
    uint64_t deadline = harness_now_ms() + HARNESS_TIMEOUT_MS;
    while (c->len < strlen(s) || memmem(c->in, c->len, s, strlen(s)) == NULL) {
        if (c->eof || harness_now_ms() >= deadline)
            return 0;
        client_pump(h, c, 1 << 20);
    }
    return 1;
}

/* ---------------------------------------------------------------- tests */

static void test_full_hijack_hands_over_the_socket_and_the_unread_bytes(void)
{
    harness_t h;
    hijacker_t hj;
    start(&h, &hj);
    hj.echo = 1;
    hj.stop_after_taking = 1;
    client_t c;
    /* "EARLY" follows the request: it is on the socket the app takes, so it is the app's. */
    client_open(&h, &c, "GET /hijack HTTP/1.1\r\n" HOST "\r\nEARLY", 0);
    CHECK(harness_wait(&h, state_is_hijacked, &hj, HARNESS_TIMEOUT_MS), "the socket was handed over");
    CHECK(up_server_num_conns(h.server) == 0,
          "a hijacked connection is not the server's to count: %zu", up_server_num_conns(h.server));
    atomic_store(&hj.go, 1);
    CHECK(wait_for_text(&h, &c, "unread=EARLY\n"), "the app got the pipelined bytes: %.*s",
          (int)c.len, c.in ? c.in : "");
    CHECK(hj.hijack_result >= 0 && hj.fd >= 0, "hijack %d, fd %d", hj.hijack_result, hj.fd);
    CHECK(hj.post_after == -1, "the engine refuses output once the socket is gone: %d",
          hj.post_after);
    client_send_str(&h, &c, "ping over the raw socket");
    CHECK(wait_for_text(&h, &c, "ping over the raw socket"), "the app echoes on its socket");
    CHECK(memmem(c.in, c.len, "HTTP/1.1", 8) == NULL, "the server wrote nothing of its own");
    client_shut_write(&c);
    CHECK(client_wait_eof(&h, &c, HARNESS_TIMEOUT_MS), "the app closed its socket");
    CHECK(harness_wait(&h, is_done, &hj, HARNESS_TIMEOUT_MS), "the borrower finished");
    finish(&hj);
    /* The exchange was returned: the connection's memory goes (ASan reports a leak if not). */
    for (int i = 0; i < 5; i++)
        harness_turn(&h, 1);
    harness_stop(&h);
    client_close(&c);
}

/* A partial hijack's head is 256 KiB, the server's socket buffer 4 KiB and the client reads
 * 4 KiB a turn: the hand-over waits for the head to be written, and the app's first bytes on
 * the raw socket come after all of it. */
static void test_partial_hijack_head_is_written_before_the_hand_over(void)
{
    enum { PAD = 256 * 1024 };
    harness_t h;
    hijacker_t hj;
    start(&h, &hj);
    hj.head_pad = PAD;
    hj.echo = 1;
    client_t c;
    client_open(&h, &c, "GET /partial HTTP/1.1\r\n" HOST "\r\n", 4096);
    up_conn_t *conn = c.conn;
    up_conn_retain(conn); /* a handle, so its state can be read after the hand-over */
    uint64_t deadline = harness_now_ms() + 4 * HARNESS_TIMEOUT_MS;
    int saw_hijacking = 0;
    while (!memmem(c.in ? c.in : "", c.len, "unread=\n", 8) && !c.eof &&
           harness_now_ms() < deadline) {
        if (up_conn_any_state(conn) == UP_CONN_LENT_HIJACKING)
            saw_hijacking = 1;
        client_pump(&h, &c, 4096);
    }
    CHECK(saw_hijacking, "the hand-over waited for the head");
    CHECK(hj.took_after_wait, "the borrower was told to wait");
    CHECK(up_conn_any_state(conn) == UP_CONN_HIJACKED && up_conn_any_broken(conn),
          "a handle sees HIJACKED, where producers stop");
    up_conn_release(conn);
    char *head_end = c.in ? memmem(c.in, c.len, "\r\n\r\n", 4) : NULL;
    char *raw = c.in ? memmem(c.in, c.len, "unread=\n", 8) : NULL;
    CHECK(head_end != NULL && raw == head_end + 4, "the head, whole, then the app's bytes");
    CHECK(c.in && strncmp(c.in, "HTTP/1.1 200 OK\r\n", 17) == 0, "a 200 head");
    CHECK(c.in && memmem(c.in, c.len, "connection: close\r\n", 19) != NULL &&
              memmem(c.in, c.len, "transfer-encoding", 17) == NULL &&
              memmem(c.in, c.len, "content-length", 14) == NULL,
          "no framing, and the connection is not kept");
    client_shut_write(&c);
    CHECK(client_wait_eof(&h, &c, HARNESS_TIMEOUT_MS), "the app closed its socket");
    finish(&hj);
    harness_stop(&h);
    client_close(&c);
}

static void test_client_gone_before_the_hand_over_gets_no_socket(void)
{
    harness_t h;
    hijacker_t hj;
    start(&h, &hj);
    hj.head_pad = 256 * 1024;
    client_t c;
    client_open(&h, &c, "GET /partial HTTP/1.1\r\n" HOST "\r\n", 4096);
    CHECK(harness_wait(&h, is_done, &hj, 50) == 0, "the head waits for the client");
    client_hang_up(&c);
    CHECK(harness_wait(&h, is_done, &hj, HARNESS_TIMEOUT_MS), "the borrower stopped waiting");
    CHECK(hj.fd == -1, "no socket after the client left: %d", hj.fd);
    CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS), "the return closed it");
    finish(&hj);
    harness_stop(&h);
    client_close(&c);
}

static void test_graceful_stop_does_not_wait_for_a_hijacked_socket(void)
{
    harness_t h;
    hijacker_t hj;
    start(&h, &hj);
    hj.echo = 1;
    client_t c, idle;
    client_open(&h, &c, "GET /hijack HTTP/1.1\r\n" HOST "\r\n", 0);
    client_open(&h, &idle, NULL, 0);
    CHECK(wait_for_text(&h, &c, "unread=\n"), "hijacked");
    up_server_stop(h.server);
    CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS), "the stop is done at once");
    CHECK(client_wait_eof(&h, &idle, HARNESS_TIMEOUT_MS), "the idle connection was closed");
    client_send_str(&h, &c, "still here");
    CHECK(wait_for_text(&h, &c, "still here"), "the hijacked socket lives on");
    client_shut_write(&c);
    CHECK(client_wait_eof(&h, &c, HARNESS_TIMEOUT_MS), "until the app closes it");
    finish(&hj);
    harness_stop(&h);
    client_close(&c);
    client_close(&idle);
}

static void test_socket_never_taken_is_closed_on_return(void)
{
    harness_t h;
    hijacker_t hj;
    start(&h, &hj);
    hj.leave_socket = 1;
    client_t c;
    client_open(&h, &c, "GET /hijack HTTP/1.1\r\n" HOST "\r\n", 0);
    CHECK(harness_wait(&h, is_done, &hj, HARNESS_TIMEOUT_MS), "the borrower is done");
    CHECK(client_wait_eof(&h, &c, HARNESS_TIMEOUT_MS), "the engine closed the socket nobody took");
    CHECK(c.len == 0, "and wrote nothing on it: %zu bytes", c.len);
    finish(&hj);
    harness_stop(&h);
    client_close(&c);
}

static void test_return_before_the_hand_over_closes(void)
{
    harness_t h;
    hijacker_t hj;
    start(&h, &hj);
    hj.head_pad = 256 * 1024;
    hj.no_wait = 1;
    client_t c;
    client_open(&h, &c, "GET /partial HTTP/1.1\r\n" HOST "\r\n", 4096);
    CHECK(harness_wait(&h, is_done, &hj, HARNESS_TIMEOUT_MS), "the borrower returned at once");
    CHECK(harness_wait(&h, no_conns, &h, HARNESS_TIMEOUT_MS), "the connection is closed");
    CHECK(client_wait_eof(&h, &c, HARNESS_TIMEOUT_MS), "the client sees the end");
    finish(&hj);
    harness_stop(&h);
    client_close(&c);
}

/* A transport that cannot give its socket up alone (as TLS could not). */
static up_transport_t no_detach;

static void test_transport_without_detach_refuses(void)
{
    harness_t h;
    hijacker_t hj;
    start(&h, &hj);
    no_detach = up_transport_tcp;
    no_detach.detach = NULL;
    client_t c;
    client_open(&h, &c, NULL, 0);
    c.conn->transport = &no_detach;
    client_send_str(&h, &c, "GET /hijack HTTP/1.1\r\n" HOST "\r\n");
    CHECK(harness_wait(&h, is_done, &hj, HARNESS_TIMEOUT_MS), "the borrower is done");
    CHECK(hj.hijack_result == -1 && hj.fd == -1, "refused: %d, fd %d", hj.hijack_result, hj.fd);
    /* Returned with nothing finished: the HTTP/1 protocol answers 500 and closes. */
    response_t res;
    int got = client_read_response(&h, &c, &res, 0, HARNESS_TIMEOUT_MS);
    CHECK(got && res.status == 500, "then a 500");
    if (got)
        response_free(&res);
    finish(&hj);
    harness_stop(&h);
    client_close(&c);
}

int main(void)
{
    harness_watchdog(120);
    test_full_hijack_hands_over_the_socket_and_the_unread_bytes();
    test_partial_hijack_head_is_written_before_the_hand_over();
    test_client_gone_before_the_hand_over_gets_no_socket();
    test_graceful_stop_does_not_wait_for_a_hijacked_socket();
    test_socket_never_taken_is_closed_on_return();
    test_return_before_the_hand_over_closes();
    test_transport_without_detach_refuses();
    return test_report("hijack_test");
}
