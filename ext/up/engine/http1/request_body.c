#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "http1/request_body.h"

void up_request_body_init(up_request_body_t *body)
{
    body->mem = NULL;
    body->len = 0;
    body->fd = -1;
    body->_buf = (up_buffer_t){NULL, 0, 0};
}

void up_request_body_borrow(up_request_body_t *body, const char *mem, size_t len)
{
    body->mem = mem;
    body->len = len;
}

static int write_all(int fd, const char *src, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, src, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        src += n;
        len -= (size_t)n;
    }
    return 0;
}

/* An anonymous file: O_TMPFILE where the file system has it, else mkstemp and unlink, so
 * nothing is left behind even if the process is killed. */
static int open_spool(const char *tmp_dir)
{
#ifdef O_TMPFILE
    int fd = open(tmp_dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0)
        return fd;
#else
    int fd;
#endif
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/up-body-XXXXXX", tmp_dir) >= (int)sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    fd = mkostemp(path, O_CLOEXEC);
    if (fd >= 0)
        unlink(path);
    return fd;
}

static int spool(up_request_body_t *body, up_buffer_pool_t *pool, const char *tmp_dir)
{
    int fd = open_spool(tmp_dir);
    if (fd < 0)
        return -1;
    if (write_all(fd, body->_buf.base, body->_buf.len) != 0) {
        int saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    up_buffer_release(&body->_buf, pool);
    body->fd = fd;
    body->mem = NULL;
    return 0;
}

int up_request_body_append(up_request_body_t *body, up_buffer_pool_t *pool, const char *src,
                           size_t len, uint64_t expected_len, uint64_t spool_threshold,
                           const char *tmp_dir)
{
    if (body->fd < 0 && body->len + len > spool_threshold) {
        if (spool(body, pool, tmp_dir) != 0)
            return -1;
    }
    if (body->fd >= 0) {
        if (write_all(body->fd, src, len) != 0)
            return -1;
    } else {
        if (body->_buf.base == NULL && expected_len > len) {
            /* expected_len is the client's word, not bytes it sent: it sizes the buffer only
             * up to a small bound (and never past the spool threshold), and the rest grows as
             * bytes arrive, so a declared 1 GB body that sends one byte costs no 1 GB. */
            uint64_t size = expected_len;
            if (size > UP_REQUEST_BODY_MAX_PRESIZE)
                size = UP_REQUEST_BODY_MAX_PRESIZE;
            if (size > spool_threshold)
                size = spool_threshold;
            if (size > len)
                up_buffer_reserve(&body->_buf, pool, (size_t)size);
        }
        up_buffer_append(&body->_buf, pool, src, len);
        body->mem = body->_buf.base;
    }
    body->len += len;
    return 0;
}

void up_request_body_reset(up_request_body_t *body, up_buffer_pool_t *pool)
{
    if (body->fd >= 0)
        close(body->fd);
    up_buffer_release(&body->_buf, pool);
    up_request_body_init(body);
}
