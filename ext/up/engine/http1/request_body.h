#ifndef UP_REQUEST_BODY_H
#define UP_REQUEST_BODY_H

/* Where a request body lives while the app reads it: a slice of the connection's read buffer
 * when the whole body came with the head (the common small POST: no copy), a buffer of its own
 * when it came in pieces, or an unlinked temporary file once it grows past the spool
 * threshold, so a 50 MB upload costs no 50 MB of memory. */

#include <stddef.h>
#include <stdint.h>
#include "base/buffer.h"

typedef struct up_request_body_t {
    const char *mem; /* the bytes when in memory (NULL when spooled or empty) */
    uint64_t len;    /* bytes in all */
    int fd;          /* >= 0 when spooled to a temporary file, read it with pread */
    up_buffer_t _buf;
} up_request_body_t;

void up_request_body_init(up_request_body_t *body);
/* Points the body at bytes owned by someone else (the read buffer). */
void up_request_body_borrow(up_request_body_t *body, const char *mem, size_t len);
/* The most a body buffer is sized ahead of the bytes that came, whatever the client declared:
 * past it, the buffer grows as the bytes arrive. */
#define UP_REQUEST_BODY_MAX_PRESIZE (64 * 1024)

/* Copies len more bytes in; expected_len (or 0 when unknown) lets the first call size the
 * buffer, up to UP_REQUEST_BODY_MAX_PRESIZE and the spool threshold. Moves everything to a
 * temporary file in tmp_dir when the total would pass spool_threshold. Returns 0, or -1 with
 * errno set when the file cannot be made or written. */
int up_request_body_append(up_request_body_t *body, up_buffer_pool_t *pool, const char *src,
                           size_t len, uint64_t expected_len, uint64_t spool_threshold,
                           const char *tmp_dir);
/* Frees the memory or closes the file; the body is empty again. */
void up_request_body_reset(up_request_body_t *body, up_buffer_pool_t *pool);

#endif
