/* The access log (access_log.h): one line a request in the common log format, then the time
 * the request took in the app in seconds:
 *
 *   127.0.0.1 - - [23/Nov/2026:16:10:00 +0000] "GET /path?q=1 HTTP/1.1" 200 12 0.000153
 *
 * Whoever finished the request formats its line and appends it to a buffer; the buffer goes
 * to the file once it is half full, at most a second after its first line (the binding's
 * turns or timer look: ext/up/ruby/turn.c, node/up/access_log.js), and at the stop: a write
 * per many requests. Bytes in the request line that could break the line (quotes,
 * backslashes, control and non-ASCII bytes) are written as \xHH. */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "http1/access_log.h"
#include "http1/http1.h"

/* Longest request target written; a longer one is cut, with "..." after it. */
#define MAX_TARGET 2048

static int open_file(const char *path)
{
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

void up_access_log_init(up_access_log_t *log)
{
    log->fd = -1;
    log->path = NULL;
    log->len = 0;
    log->date_second = 0;
    pthread_mutex_init(&log->lock, NULL);
}

void up_access_log_destroy(up_access_log_t *log)
{
    up_access_log_close(log);
    pthread_mutex_destroy(&log->lock);
}

int up_access_log_open(up_access_log_t *log, const char *path)
{
    char *copy = strdup(path);
    if (copy == NULL)
        return -1;
    int fd = open_file(path);
    if (fd < 0) {
        int saved = errno;
        free(copy);
        errno = saved;
        return -1;
    }
    log->fd = fd;
    log->path = copy;
    return 0;
}

/* Writes the buffer out; log->lock held. A failed write drops those lines: a full disk must
 * not stop the server. */
static void flush_locked(up_access_log_t *log)
{
    size_t done = 0;
    while (done < log->len) {
        ssize_t n = write(log->fd, log->buf + done, log->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        done += (size_t)n;
    }
    log->len = 0;
}

void up_access_log_flush(up_access_log_t *log, int force)
{
    if (log->fd < 0 || log->len == 0)
        return;
    time_t now = time(NULL);
    pthread_mutex_lock(&log->lock);
    if (force || now != log->first_line)
        flush_locked(log);
    pthread_mutex_unlock(&log->lock);
}

int up_access_log_reopen(up_access_log_t *log)
{
    if (log->fd < 0)
        return 0;
    int fd = open_file(log->path);
    if (fd < 0)
        return -1; /* keep writing to the old one rather than lose lines */
    pthread_mutex_lock(&log->lock);
    flush_locked(log);
    close(log->fd);
    log->fd = fd;
    pthread_mutex_unlock(&log->lock);
    return 0;
}

void up_access_log_close(up_access_log_t *log)
{
    if (log->fd < 0)
        return;
    pthread_mutex_lock(&log->lock);
    flush_locked(log);
    pthread_mutex_unlock(&log->lock);
    close(log->fd);
    log->fd = -1;
    free(log->path);
    log->path = NULL;
}

/* Appends s escaped to p (room for 4 bytes a byte of s); returns the new end. */
static char *put_escaped(char *p, up_slice_t s, size_t max)
{
    static const char hex[] = "0123456789abcdef";
    size_t len = s.len < max ? s.len : max;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s.base[i];
        if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
            *p++ = '\\';
            *p++ = 'x';
            *p++ = hex[c >> 4];
            *p++ = hex[c & 15];
        } else {
            *p++ = (char)c;
        }
    }
    if (len < s.len) {
        memcpy(p, "...", 3);
        p += 3;
    }
    return p;
}

/* Appends v in decimal, at least width digits (zeros in front); returns the new end. By hand
 * rather than sprintf: this runs once a request. */
static char *put_uint(char *p, uint64_t v, int width)
{
    char digits[20];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    while (n < width)
        digits[n++] = '0';
    while (n > 0)
        *p++ = digits[--n];
    return p;
}

/* "[23/Nov/2026:16:10:00 +0000]", made once a second. log->lock held. */
static const char *date_locked(up_access_log_t *log, time_t now)
{
    if (now != log->date_second) {
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(log->date, sizeof(log->date), "[%d/%b/%Y:%H:%M:%S +0000]", &tm);
        log->date_second = now;
    }
    return log->date;
}

void up_access_log_request(up_access_log_t *log, const up_exchange_t *ex, uint64_t took_ns)
{
    const up_http1_request_t *head = &ex->req->head;
    const up_response_state_t *res = ex->res;
    char line[4 * (MAX_TARGET + 64) + 256];
    char *p = line;
    const up_conn_t *conn = ex->conn;
    const char *addr = conn->remote_addr[0] != '\0' ? conn->remote_addr : "-";
    size_t addr_len = strlen(addr);
    memcpy(p, addr, addr_len);
    p += addr_len;
    memcpy(p, " - - ", 5);
    p += 5;
    char *date_at = p; /* the date goes here, under the lock */
    p += 28;
    memcpy(p, " \"", 2);
    p += 2;
    p = put_escaped(p, head->method, 32);
    *p++ = ' ';
    p = put_escaped(p, head->target, MAX_TARGET);
    if (ex->req->http2) {
        memcpy(p, " HTTP/2", 7);
        p += 7;
    } else {
        memcpy(p, " HTTP/1.", 8);
        p = put_uint(p + 8, (uint64_t)(head->minor_version > 0 ? head->minor_version : 0), 1);
    }
    memcpy(p, "\" ", 2);
    p = put_uint(p + 2, (uint64_t)(res->status > 0 ? res->status : 0), 1);
    *p++ = ' ';
    p = put_uint(p, res->body_bytes, 1);
    *p++ = ' ';
    p = put_uint(p, took_ns / 1000000000ull, 1);
    *p++ = '.';
    p = put_uint(p, took_ns / 1000 % 1000000, 6);
    *p++ = '\n';
    size_t len = (size_t)(p - line);

    time_t now = time(NULL);
    pthread_mutex_lock(&log->lock);
    memcpy(date_at, date_locked(log, now), 28);
    if (log->len + len > sizeof(log->buf))
        flush_locked(log);
    if (log->len == 0)
        log->first_line = now;
    memcpy(log->buf + log->len, line, len);
    log->len += len;
    if (log->len > sizeof(log->buf) / 2)
        flush_locked(log);
    pthread_mutex_unlock(&log->lock);
}
