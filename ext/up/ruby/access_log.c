/* The access log (--access-log FILE): one line a request in the common log format, then the
 * time the request took in the app in seconds:
 *
 *   127.0.0.1 - - [23/Nov/2026:16:10:00 +0000] "GET /path?q=1 HTTP/1.1" 200 12 0.000153
 *
 * The thread that ran the request formats its line and appends it to a buffer; the buffer
 * goes to the file once it is half full, at most a second after its first line (loop turns
 * look, see turn.c), and at the stop: a write per many requests, none of them on the loop's
 * behalf. Bytes in the request line that could break the line (quotes, backslashes, control
 * and non-ASCII bytes) are written as \xHH. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "binding.h"

/* Longest request target written; a longer one is cut, with "..." after it. */
#define MAX_TARGET 2048

static int open_file(const char *path)
{
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}

void up_rb_access_log_open(up_rb_server_t *srv, const char *path)
{
    up_rb_access_log_t *log = &srv->access_log;
    log->fd = open_file(path);
    if (log->fd < 0)
        rb_sys_fail(path);
    log->path = strdup(path);
    if (log->path == NULL)
        rb_memerror();
}

/* Writes the buffer out; log->lock held. A failed write drops those lines: a full disk must
 * not stop the server. */
static void flush_locked(up_rb_access_log_t *log)
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

void up_rb_access_log_flush(up_rb_server_t *srv, int force)
{
    up_rb_access_log_t *log = &srv->access_log;
    if (log->fd < 0 || log->len == 0)
        return;
    time_t now = time(NULL);
    pthread_mutex_lock(&log->lock);
    if (force || now != log->first_line)
        flush_locked(log);
    pthread_mutex_unlock(&log->lock);
}

void up_rb_access_log_reopen(up_rb_server_t *srv)
{
    up_rb_access_log_t *log = &srv->access_log;
    if (log->fd < 0)
        return;
    int fd = open_file(log->path);
    if (fd < 0)
        return; /* keep writing to the old one rather than lose lines */
    pthread_mutex_lock(&log->lock);
    flush_locked(log);
    close(log->fd);
    log->fd = fd;
    pthread_mutex_unlock(&log->lock);
}

void up_rb_access_log_close(up_rb_server_t *srv)
{
    up_rb_access_log_t *log = &srv->access_log;
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

/* "[23/Nov/2026:16:10:00 +0000]", made once a second. log->lock held. */
static const char *date_locked(up_rb_access_log_t *log, time_t now)
{
    if (now != log->date_second) {
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(log->date, sizeof(log->date), "[%d/%b/%Y:%H:%M:%S +0000]", &tm);
        log->date_second = now;
    }
    return log->date;
}

void up_rb_access_log_request(up_rb_server_t *srv, up_conn_t *conn, uint64_t started_ns)
{
    up_rb_access_log_t *log = &srv->access_log;
    const up_http1_request_t *head = &conn->req->head;
    const up_response_state_t *res = conn->res;
    uint64_t took_ns = up_rb_now_ns() - started_ns;
    char line[4 * (MAX_TARGET + 64) + 256];
    char *p = line;
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
    p += sprintf(p, " HTTP/1.%d\" %d %llu %llu.%06llu\n", head->minor_version, res->status,
                 (unsigned long long)res->body_bytes, (unsigned long long)(took_ns / 1000000000ull),
                 (unsigned long long)(took_ns / 1000 % 1000000));
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
