/* The socketpair harness; see engine_harness.h. */

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "engine_harness.h"
#include "tls_harness.h"

/* ---------------------------------------------------------------- loop and server */

static void on_alarm(int sig)
{
    static const char msg[] = "engine test: watchdog expired, something hangs\n";
    (void)sig;
    ssize_t r = write(2, msg, sizeof(msg) - 1);
    (void)r;
    _exit(3);
}

void harness_watchdog(unsigned seconds)
{
    signal(SIGALRM, on_alarm);
    alarm(seconds);
}

uint64_t harness_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void harness_start(harness_t *h, const up_server_config_t *cfg, const up_server_handler_t *handler)
{
    up_server_config_t defaults;
    if (cfg == NULL) {
        up_server_config_defaults(&defaults);
        cfg = &defaults;
    }
    signal(SIGPIPE, SIG_IGN);
    h->loop = up_loop_new();
    if (h->loop == NULL) {
        perror("up_loop_new");
        exit(2);
    }
#ifndef UP_LOOP_UV
    up_loop_set_owner(h->loop, 1); /* a libuv loop's thread is the one that made it */
#endif
    h->server = up_server_new(h->loop, cfg, handler);
}

void harness_stop(harness_t *h)
{
    up_server_free(h->server);
    up_loop_free(h->loop);
    h->server = NULL;
    h->loop = NULL;
}

void harness_turn(harness_t *h, int timeout_ms)
{
#ifdef UP_LOOP_UV
    up_loop_uv_run_once(h->loop, timeout_ms);
#else
    up_loop_wait(h->loop, timeout_ms);
    up_loop_dispatch(h->loop);
#endif
}

int harness_wait(harness_t *h, int (*cond)(void *arg), void *arg, int timeout_ms)
{
    uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
    while (!cond(arg)) {
        if (harness_now_ms() >= deadline)
            return 0;
        harness_turn(h, 1);
    }
    return 1;
}

/* ---------------------------------------------------------------- clients */

void client_open(harness_t *h, client_t *c, const char *early, int server_sndbuf)
{
    client_open_with(h, c, early, server_sndbuf, &up_http1_protocol);
}

void client_open_with(harness_t *h, client_t *c, const char *early, int server_sndbuf,
                      const up_protocol_t *protocol)
{
    int sv[2];
    memset(c, 0, sizeof(*c));
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) {
        perror("socketpair");
        exit(2);
    }
    if (server_sndbuf > 0 &&
        setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &server_sndbuf, sizeof(server_sndbuf)) != 0) {
        perror("setsockopt SO_SNDBUF");
        exit(2);
    }
    c->fd = sv[1];
    if (early != NULL && client_send(h, c, early, strlen(early)) != 0) {
        fprintf(stderr, "client_open: cannot write the early bytes\n");
        exit(2);
    }
    c->conn = up_conn_loop_accept(h->server, NULL, protocol, sv[0], NULL);
}

void client_shut_write(client_t *c)
{
    if (c->ssl != NULL)
        client_tls_shutdown(c);
    shutdown(c->fd, SHUT_WR);
}

void client_hang_up(client_t *c)
{
    if (c->ssl != NULL)
        client_tls_free(c);
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

void client_close(client_t *c)
{
    client_hang_up(c);
    free(c->in);
    c->in = NULL;
    c->len = c->cap = c->pos = 0;
}

size_t client_read_some(client_t *c, size_t max)
{
    size_t total = 0;
    while (c->fd >= 0 && !c->eof && total < max) {
        if (c->cap - c->len < 4096) {
            c->cap = c->cap == 0 ? 65536 : c->cap * 2;
            c->in = realloc(c->in, c->cap + 1);
            if (c->in == NULL) {
                perror("realloc");
                exit(2);
            }
        }
        size_t want = c->cap - c->len;
        if (want > max - total)
            want = max - total;
        ssize_t n = c->ssl != NULL ? client_tls_read(c, c->in + c->len, want)
                                   : read(c->fd, c->in + c->len, want);
        if (n > 0) {
            c->len += (size_t)n;
            total += (size_t)n;
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EINTR))
            c->eof = 1; /* a reset reads as the end too */
        if (n < 0 && errno == EINTR)
            continue;
        break;
    }
    if (c->in != NULL)
        c->in[c->len] = '\0';
    return total;
}

void client_pump(harness_t *h, client_t *c, size_t max_read)
{
    client_read_some(c, max_read);
    harness_turn(h, 1);
}

int client_send(harness_t *h, client_t *c, const void *data, size_t len)
{
    const char *p = data;
    uint64_t deadline = harness_now_ms() + HARNESS_TIMEOUT_MS;
    while (len > 0) {
        ssize_t n =
            c->ssl != NULL ? client_tls_write(c, p, len) : send(c->fd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return -1;
        if (harness_now_ms() >= deadline)
            return -1;
        /* The server has not read yet: let it, and take what it answered meanwhile. */
        client_pump(h, c, SIZE_MAX);
    }
    return 0;
}

int client_send_str(harness_t *h, client_t *c, const char *s)
{
    return client_send(h, c, s, strlen(s));
}

int client_wait_eof(harness_t *h, client_t *c, int timeout_ms)
{
    uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
    for (;;) {
        client_read_some(c, SIZE_MAX);
        if (c->eof)
            return 1;
        if (harness_now_ms() >= deadline)
            return 0;
        harness_turn(h, 1);
    }
}

int client_wait_bytes(harness_t *h, client_t *c, size_t n, int timeout_ms)
{
    uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
    for (;;) {
        client_read_some(c, SIZE_MAX);
        if (c->len - c->pos >= n)
            return 1;
        if (c->eof || harness_now_ms() >= deadline)
            return 0;
        harness_turn(h, 1);
    }
}

int client_wait(harness_t *h, client_t *c, size_t max_read, int (*done)(client_t *c, void *arg),
                void *arg, int timeout_ms)
{
    uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
    for (;;) {
        client_read_some(c, max_read);
        if (done(c, arg))
            return 1;
        if (harness_now_ms() >= deadline)
            return 0;
        harness_turn(h, 1);
    }
}

/* ---------------------------------------------------------------- responses */

static const char *find(const char *buf, size_t len, const char *needle)
{
    return memmem(buf, len, needle, strlen(needle));
}

/* Decodes a chunked body at buf into out (which has room for len bytes). Returns the bytes
 * the framing took, 0 when incomplete, -1 when malformed. Trailers are not expected. */
static long decode_chunked(const char *buf, size_t len, char *out, size_t *out_len)
{
    size_t at = 0;
    *out_len = 0;
    for (;;) {
        const char *eol = find(buf + at, len - at, "\r\n");
        if (eol == NULL)
            return 0;
        char *end;
        unsigned long size = strtoul(buf + at, &end, 16);
        if (end != eol || end == buf + at)
            return -1;
        at = (size_t)(eol - buf) + 2;
        if (len - at < size + 2)
            return 0;
        if (buf[at + size] != '\r' || buf[at + size + 1] != '\n')
            return -1;
        memcpy(out + *out_len, buf + at, size);
        *out_len += size;
        at += size + 2;
        if (size == 0)
            return (long)at;
    }
}

long response_parse(const char *buf, size_t len, int eof, int head_only, response_t *res)
{
    memset(res, 0, sizeof(*res));
    res->content_length = -1;
    const char *end = find(buf, len, "\r\n\r\n");
    if (end == NULL)
        return 0;
    size_t head_len = (size_t)(end - buf) + 4;
    if (head_len < 14 || memcmp(buf, "HTTP/1.1 ", 9) != 0)
        return -1;
    res->status = atoi(buf + 9);

    /* The head line by line, the Date line left out of raw. */
    res->raw = malloc(len + 1);
    res->body = malloc(len + 1);
    if (res->raw == NULL || res->body == NULL) {
        perror("malloc");
        exit(2);
    }
    size_t at = 0;
    while (at < head_len) {
        const char *eol = find(buf + at, head_len - at, "\r\n");
        size_t line_len = (size_t)(eol - (buf + at)) + 2;
        const char *line = buf + at;
        if (strncasecmp(line, "date: ", 6) == 0) {
            res->has_date = 1;
        } else {
            memcpy(res->raw + res->raw_len, line, line_len);
            res->raw_len += line_len;
        }
        if (strncasecmp(line, "content-length: ", 16) == 0)
            res->content_length = strtoll(line + 16, NULL, 10);
        else if (strncasecmp(line, "transfer-encoding: chunked\r\n", line_len) == 0)
            res->chunked = 1;
        else if (strncasecmp(line, "connection: close\r\n", line_len) == 0)
            res->close = 1;
        at += line_len;
    }

    const char *body = buf + head_len;
    size_t avail = len - head_len;
    long taken;
    int bodiless = head_only || res->status < 200 || res->status == 204 || res->status == 304;
    if (bodiless) {
        taken = 0;
    } else if (res->chunked) {
        taken = decode_chunked(body, avail, res->body, &res->body_len);
        if (taken <= 0) {
            response_free(res);
            return taken;
        }
    } else if (res->content_length >= 0) {
        if (avail < (uint64_t)res->content_length) {
            response_free(res);
            return 0;
        }
        taken = (long)res->content_length;
        memcpy(res->body, body, (size_t)taken);
        res->body_len = (size_t)taken;
    } else {
        if (!eof) {
            response_free(res);
            return 0;
        }
        taken = (long)avail;
        memcpy(res->body, body, avail);
        res->body_len = avail;
    }
    memcpy(res->raw + res->raw_len, body, (size_t)taken);
    res->raw_len += (size_t)taken;
    res->raw[res->raw_len] = '\0';
    res->body[res->body_len] = '\0';
    return (long)head_len + taken;
}

void response_free(response_t *res)
{
    free(res->raw);
    free(res->body);
    res->raw = res->body = NULL;
}

int client_read_response(harness_t *h, client_t *c, response_t *res, int head_only, int timeout_ms)
{
    uint64_t deadline = harness_now_ms() + (uint64_t)timeout_ms;
    for (;;) {
        client_read_some(c, SIZE_MAX);
        long r = response_parse(c->in + c->pos, c->len - c->pos, c->eof, head_only, res);
        if (r > 0) {
            c->pos += (size_t)r;
            return 1;
        }
        if (r < 0 || c->eof || harness_now_ms() >= deadline) {
            memset(res, 0, sizeof(*res));
            return 0;
        }
        harness_turn(h, 1);
    }
}

/* ---------------------------------------------------------------- data */

int harness_temp_file(const char *data, size_t len)
{
    char path[] = "/tmp/up-engine-test-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        exit(2);
    }
    unlink(path);
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n <= 0) {
            perror("write");
            exit(2);
        }
        done += (size_t)n;
    }
    return fd;
}

void harness_pattern(char *buf, size_t len, uint64_t start)
{
    for (size_t i = 0; i < len; i++) {
        uint64_t pos = start + i;
        buf[i] = (char)('!' + (pos % 89 + pos / 89) % 94);
    }
}

/* nftw's callback: unlinks one entry; directories come after their contents (FTW_DEPTH). */
static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if ((type == FTW_DP ? rmdir(path) : unlink(path)) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

int harness_remove_tree(const char *dir)
{
    /* 16 descriptors at most; FTW_PHYS reports a symlink (even to a directory) as itself. */
    return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}
