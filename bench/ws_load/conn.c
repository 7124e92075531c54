#include "conn.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Events taken from epoll per wait. */
#define EVENTS 256
/* RFC 6455 §7.4.1: 1000 is a normal close. */
#define CLOSE_NORMAL 1000
/* The request is a few hundred bytes; the path is the only part from the command line. */
#define REQUEST_MAX 2048

uint64_t wsl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xorshift64* (Vigna, 2016): masks and handshake nonces. RFC 6455 §5.3 asks for masks a
 * proxy cannot predict; on loopback nothing is in between, so a fast generator seeded from
 * the kernel is enough. */
static uint64_t next_random(wsl_run_t *run)
{
    uint64_t x = run->_rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    run->_rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

void wsl_run_error(wsl_run_t *run, wsl_error_t kind, const char *fmt, ...)
{
    run->errors[kind]++;
    if (run->first_error[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(run->first_error, sizeof run->first_error, fmt, ap);
    va_end(ap);
}

const char *wsl_error_name(wsl_error_t kind)
{
    switch (kind) {
    case WSL_ERR_CONNECT: return "connect";
    case WSL_ERR_HANDSHAKE: return "handshake";
    case WSL_ERR_CLOSED: return "closed";
    case WSL_ERR_PROTOCOL: return "protocol";
    case WSL_ERR_MISMATCH: return "mismatch";
    case WSL_ERR_TIMEOUT: return "timeout";
    case WSL_ERR_COUNT: break;
    }
    return "unknown";
}

int wsl_run_init(wsl_run_t *run, const wsl_options_t *opt, const wsl_mode_ops_t *ops, void *mode,
                 unsigned count)
{
    memset(run, 0, sizeof *run);
    run->opt = opt;
    run->ops = ops;
    run->mode = mode;
    run->count = count;
    run->started = wsl_now();
    run->_epoll = -1;
    run->conns = calloc(count, sizeof *run->conns);
    run->_read_buf = malloc(WSL_READ_CHUNK);
    run->_send_buf = malloc(WSL_FRAME_HEADER_MAX + WSL_MAX_SIZE);
    if (!run->conns || !run->_read_buf || !run->_send_buf)
        goto fail;
    run->_epoll = epoll_create1(EPOLL_CLOEXEC);
    if (run->_epoll < 0)
        goto fail;
    for (unsigned i = 0; i < count; i++)
        run->conns[i].fd = -1;
    if (getrandom(&run->_rng, sizeof run->_rng, 0) != sizeof run->_rng)
        run->_rng = wsl_now();
    run->_rng |= 1; /* xorshift never leaves 0 */
    return 0;
fail:;
    int saved = errno;
    wsl_run_free(run);
    errno = saved ? saved : ENOMEM;
    return -1;
}

static void release(wsl_conn_t *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->_head);
    c->_head = NULL;
    free(c->_out);
    c->_out = NULL;
    c->_out_len = c->_out_cap = 0;
}

void wsl_run_free(wsl_run_t *run)
{
    if (run->conns)
        for (unsigned i = 0; i < run->count; i++)
            release(&run->conns[i]);
    if (run->_epoll >= 0)
        close(run->_epoll);
    free(run->conns);
    free(run->_read_buf);
    free(run->_send_buf);
    run->conns = NULL;
    run->_read_buf = run->_send_buf = NULL;
    run->_epoll = -1;
}

static void watch(wsl_run_t *run, wsl_conn_t *c, int op, uint32_t events)
{
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(run->_epoll, op, c->fd, &ev) != 0)
        wsl_run_error(run, WSL_ERR_CONNECT, "epoll_ctl: %s", strerror(errno));
}

void wsl_conn_close(wsl_run_t *run, wsl_conn_t *c, bool close_frame)
{
    if (c->state == WSL_CONN_CLOSED)
        return;
    if (c->state == WSL_CONN_OPEN && close_frame) {
        uint8_t code[2] = {CLOSE_NORMAL >> 8, CLOSE_NORMAL & 0xff};
        wsl_conn_send(run, c, WSL_OP_CLOSE, code, sizeof code);
    }
    wsl_conn_state_t was = c->state;
    if (was == WSL_CONN_CONNECTING || was == WSL_CONN_HANDSHAKE)
        run->_opening--;
    if (was == WSL_CONN_OPEN)
        run->open--;
    else if (was != WSL_CONN_NEW)
        run->failed++;
    c->state = WSL_CONN_CLOSED;
    release(c); /* close() also takes it out of the epoll set */
    if (was == WSL_CONN_OPEN && run->ops->on_close)
        run->ops->on_close(run, c);
}

/* Sends what is queued; false when the socket failed (the connection is then closed). */
static bool flush(wsl_run_t *run, wsl_conn_t *c)
{
    while (c->_out_len > 0) {
        ssize_t n = send(c->fd, c->_out, c->_out_len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN)
                return true;
            if (!run->ending)
                wsl_run_error(run, WSL_ERR_CLOSED, "send: %s", strerror(errno));
            wsl_conn_close(run, c, false);
            return false;
        }
        memmove(c->_out, c->_out + n, c->_out_len - (size_t)n);
        c->_out_len -= (size_t)n;
    }
    return true;
}

/* Sends len bytes, queueing what the socket does not take; false when the connection closed. */
static bool send_bytes(wsl_run_t *run, wsl_conn_t *c, const uint8_t *data, size_t len)
{
    size_t sent = 0;
    if (c->_out_len == 0) {
        ssize_t n;
        do
            n = send(c->fd, data, len, MSG_NOSIGNAL);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno != EAGAIN) {
            if (!run->ending)
                wsl_run_error(run, WSL_ERR_CLOSED, "send: %s", strerror(errno));
            wsl_conn_close(run, c, false);
            return false;
        }
        sent = n > 0 ? (size_t)n : 0;
        if (sent == len)
            return true;
    }
    size_t rest = len - sent;
    if (c->_out_len + rest > WSL_MAX_PENDING) {
        wsl_run_error(run, WSL_ERR_TIMEOUT, "the server stopped reading (%zu bytes unsent)",
                      c->_out_len + rest);
        wsl_conn_close(run, c, false);
        return false;
    }
    if (c->_out_len + rest > c->_out_cap) {
        size_t cap = c->_out_cap ? c->_out_cap : 4096;
        while (cap < c->_out_len + rest)
            cap *= 2;
        uint8_t *out = realloc(c->_out, cap);
        if (!out) {
            wsl_run_error(run, WSL_ERR_CLOSED, "out of memory for unsent bytes");
            wsl_conn_close(run, c, false);
            return false;
        }
        c->_out = out;
        c->_out_cap = cap;
    }
    bool was_empty = c->_out_len == 0;
    memcpy(c->_out + c->_out_len, data + sent, rest);
    c->_out_len += rest;
    if (was_empty && c->state != WSL_CONN_CONNECTING)
        watch(run, c, EPOLL_CTL_MOD, EPOLLIN | EPOLLOUT | EPOLLRDHUP);
    return true;
}

bool wsl_conn_send(wsl_run_t *run, wsl_conn_t *c, uint8_t opcode, const uint8_t *data, size_t len)
{
    if (c->state != WSL_CONN_OPEN || len > WSL_MAX_SIZE)
        return false;
    uint64_t r = next_random(run);
    uint8_t mask[4] = {(uint8_t)r, (uint8_t)(r >> 8), (uint8_t)(r >> 16), (uint8_t)(r >> 24)};
    size_t at = wsl_frame_header(run->_send_buf, opcode, true, len, mask);
    memcpy(run->_send_buf + at, data, len);
    wsl_frame_mask(run->_send_buf + at, len, mask, 0);
    return send_bytes(run, c, run->_send_buf, at + len);
}

/* Starts connection c: a non-blocking connect, watched for writability. */
static void start(wsl_run_t *run, wsl_conn_t *c)
{
    const wsl_options_t *opt = run->opt;
    c->fd = socket(opt->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        wsl_run_error(run, WSL_ERR_CONNECT, "socket: %s", strerror(errno));
        c->state = WSL_CONN_CLOSED;
        run->failed++;
        return;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->state = WSL_CONN_CONNECTING;
    run->_opening++;
    if (connect(c->fd, (const struct sockaddr *)&opt->addr, opt->addr_len) != 0 &&
        errno != EINPROGRESS) {
        wsl_run_error(run, WSL_ERR_CONNECT, "connect: %s", strerror(errno));
        wsl_conn_close(run, c, false);
        return;
    }
    watch(run, c, EPOLL_CTL_ADD, EPOLLOUT | EPOLLRDHUP);
}

/* The connect finished: on success, sends the upgrade request. */
static void on_connected(wsl_run_t *run, wsl_conn_t *c)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err) {
        wsl_run_error(run, WSL_ERR_CONNECT, "connect: %s", strerror(err));
        wsl_conn_close(run, c, false);
        return;
    }
    uint8_t nonce[16];
    for (int i = 0; i < 16; i += 8) {
        uint64_t r = next_random(run);
        memcpy(nonce + i, &r, 8);
    }
    char key[WSL_KEY_LEN], request[REQUEST_MAX];
    wsl_handshake_key(nonce, key);
    wsl_handshake_accept(key, c->_accept);
    size_t n = wsl_handshake_request(request, sizeof request, run->opt->host, c->path, key);
    c->_head = malloc(WSL_HANDSHAKE_MAX);
    if (n == 0 || !c->_head) {
        wsl_run_error(run, WSL_ERR_HANDSHAKE, n == 0 ? "request too long" : "out of memory");
        wsl_conn_close(run, c, false);
        return;
    }
    c->state = WSL_CONN_HANDSHAKE;
    watch(run, c, EPOLL_CTL_MOD, EPOLLIN | EPOLLRDHUP);
    send_bytes(run, c, (const uint8_t *)request, n);
}

/* A control frame is complete: a ping gets its pong, a close gets its close (§5.5.1). */
static void on_control(wsl_run_t *run, wsl_conn_t *c, uint8_t opcode)
{
    if (opcode == WSL_OP_PING) {
        wsl_conn_send(run, c, WSL_OP_PONG, c->_control, c->_control_len);
    } else if (opcode == WSL_OP_CLOSE) {
        unsigned code = c->_control_len >= 2 ? (unsigned)c->_control[0] << 8 | c->_control[1] : 0;
        if (!run->ending)
            wsl_run_error(run, WSL_ERR_CLOSED, "the server closed a connection (code %u)", code);
        if (c->_control_len >= 2)
            wsl_conn_send(run, c, WSL_OP_CLOSE, c->_control, 2);
        wsl_conn_close(run, c, false);
    }
}

/* Feeds frame bytes to the reader and the reader's events to the mode. */
static void on_frames(wsl_run_t *run, wsl_conn_t *c, const uint8_t *buf, size_t len)
{
    const wsl_mode_ops_t *ops = run->ops;
    size_t at = 0;
    while (c->state == WSL_CONN_OPEN) {
        wsl_frame_event_t ev;
        at += wsl_frame_read(&c->_reader, buf + at, len - at, &ev);
        bool control = (ev.opcode & 0x8) != 0;
        switch (ev.kind) {
        case WSL_FRAME_NEED_MORE: return;
        case WSL_FRAME_ERROR:
            wsl_run_error(run, WSL_ERR_PROTOCOL, "%s", wsl_frame_error_name(ev.error));
            wsl_conn_close(run, c, false);
            return;
        case WSL_FRAME_HEADER:
            if (control) {
                c->_control_len = 0;
            } else if (ev.opcode != WSL_OP_CONTINUATION) {
                c->_opcode = ev.opcode;
                c->_msg_len = 0;
            }
            break;
        case WSL_FRAME_DATA:
            if (control) {
                memcpy(c->_control + c->_control_len, ev.data, ev.len); /* <= 125 in all */
                c->_control_len += ev.len;
            } else {
                if (ops->on_data)
                    ops->on_data(run, c, c->_msg_len, ev.data, ev.len);
                c->_msg_len += ev.len;
            }
            break;
        case WSL_FRAME_END:
            if (control)
                on_control(run, c, ev.opcode);
            else if (ev.fin && ops->on_message)
                ops->on_message(run, c, c->_opcode, c->_msg_len);
            break;
        }
    }
}

/* Response bytes while in the handshake: once the head is complete and valid, the
 * connection is open and what follows the head is frames. */
static void on_handshake(wsl_run_t *run, wsl_conn_t *c, const uint8_t *buf, size_t len)
{
    size_t take = WSL_HANDSHAKE_MAX - c->_head_len < len ? WSL_HANDSHAKE_MAX - c->_head_len : len;
    memcpy(c->_head + c->_head_len, buf, take);
    c->_head_len += take;
    wsl_handshake_error_t error;
    long head = wsl_handshake_parse(c->_head, c->_head_len, c->_accept, &error);
    if (head < 0) {
        char first[64];
        size_t n = strcspn(c->_head, "\r\n");
        snprintf(first, sizeof first, "%.*s", (int)(n < c->_head_len ? n : c->_head_len), c->_head);
        wsl_run_error(run, WSL_ERR_HANDSHAKE, "%s: %s", wsl_handshake_error_name(error), first);
        wsl_conn_close(run, c, false);
        return;
    }
    if (head == 0)
        return;
    size_t frames_from = (size_t)head - (c->_head_len - take); /* within buf */
    free(c->_head);
    c->_head = NULL;
    c->_head_len = 0;
    wsl_frame_reader_init(&c->_reader, WSL_MAX_SIZE);
    c->state = WSL_CONN_OPEN;
    run->_opening--;
    run->opened++;
    run->open++;
    if (run->ops->on_open)
        run->ops->on_open(run, c);
    if (c->state == WSL_CONN_OPEN && frames_from < len)
        on_frames(run, c, buf + frames_from, len - frames_from);
}

static void on_readable(wsl_run_t *run, wsl_conn_t *c)
{
    ssize_t n;
    do
        n = recv(c->fd, run->_read_buf, WSL_READ_CHUNK, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0 && errno == EAGAIN)
        return;
    if (n <= 0) {
        if (!run->ending)
            wsl_run_error(run, c->state == WSL_CONN_OPEN ? WSL_ERR_CLOSED : WSL_ERR_HANDSHAKE,
                          "%s %s", c->state == WSL_CONN_OPEN ? "connection" : "handshake",
                          n == 0 ? "closed by the server" : strerror(errno));
        wsl_conn_close(run, c, false);
        return;
    }
    run->now = wsl_now();
    if (c->state == WSL_CONN_HANDSHAKE)
        on_handshake(run, c, run->_read_buf, (size_t)n);
    else
        on_frames(run, c, run->_read_buf, (size_t)n);
}

static void on_event(wsl_run_t *run, wsl_conn_t *c, uint32_t events)
{
    if (c->state == WSL_CONN_CONNECTING) {
        on_connected(run, c);
        return;
    }
    if (events & EPOLLOUT && c->state != WSL_CONN_CLOSED) {
        if (flush(run, c) && c->_out_len == 0)
            watch(run, c, EPOLL_CTL_MOD, EPOLLIN | EPOLLRDHUP);
    }
    if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR) && c->state != WSL_CONN_CLOSED)
        on_readable(run, c);
}

int wsl_run_poll(wsl_run_t *run, uint64_t deadline)
{
    struct epoll_event events[EVENTS];
    uint64_t now = wsl_now();
    int timeout = now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
    int n = epoll_wait(run->_epoll, events, EVENTS, timeout);
    if (n < 0) {
        if (errno == EINTR)
            return 0;
        wsl_run_error(run, WSL_ERR_CONNECT, "epoll_wait: %s", strerror(errno));
        return -1;
    }
    run->now = wsl_now();
    for (int i = 0; i < n; i++)
        on_event(run, events[i].data.ptr, events[i].events);
    return 0;
}

unsigned wsl_run_open_all(wsl_run_t *run, uint64_t deadline)
{
    for (;;) {
        while (run->_next < run->count && run->_opening < WSL_MAX_OPENING)
            start(run, &run->conns[run->_next++]);
        if (run->_next == run->count && run->_opening == 0)
            break;
        if (wsl_now() >= deadline) {
            for (unsigned i = 0; i < run->count; i++) {
                wsl_conn_t *c = &run->conns[i];
                if (c->state == WSL_CONN_OPEN || c->state == WSL_CONN_CLOSED)
                    continue;
                wsl_run_error(run, WSL_ERR_TIMEOUT, "connection %u not open in time", i);
                if (c->state == WSL_CONN_NEW) {
                    c->state = WSL_CONN_CLOSED;
                    run->failed++;
                } else {
                    wsl_conn_close(run, c, false);
                }
            }
            run->_next = run->count;
            break;
        }
        if (wsl_run_poll(run, deadline) != 0)
            break;
    }
    return run->open;
}
