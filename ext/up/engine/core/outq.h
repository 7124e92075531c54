#ifndef UP_OUTQ_H
#define UP_OUTQ_H

/* The output queue of a connection: what is waiting to be written, as a list of segments of
 * three kinds:
 *
 *  - owned bytes, copied into chunks from the server's buffer pool (response heads, small
 *    bodies, frames);
 *  - shared slices: a reference to bytes someone else owns (a large body String, one encoded
 *    broadcast frame that thousands of connections send), released when written;
 *  - file ranges, sent from the kernel (sendfile), the fd owned by the queue or by a shared
 *    owner it holds a reference to (a cached open file).
 *
 * A write takes what the transport accepts from the head and advances an offset: nothing is
 * ever moved, so a slow client costs no copying however large its backlog. A queue belongs to
 * one thread at a time; handing segments between threads is splicing one queue onto another
 * under a lock (see conn.h). */

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "base/buffer.h"
#include "core/transport.h"

/* Bytes owned by someone else, shared by every queue that references them. */
typedef struct up_shared_t {
    const char *base;
    size_t len;
    /* Runs once, when the last reference is released, on whichever thread released it. */
    void (*dispose)(struct up_shared_t *shared);
    atomic_size_t _refs;
} up_shared_t;

/* Starts with one reference, the caller's. */
void up_shared_init(up_shared_t *shared, const char *base, size_t len,
                    void (*dispose)(up_shared_t *shared));
void up_shared_retain(up_shared_t *shared);
void up_shared_release(up_shared_t *shared);

typedef struct up_outq_seg_t up_outq_seg_t;

typedef struct up_outq_t {
    up_outq_seg_t *head, *tail;
    uint64_t bytes;      /* unwritten bytes in memory (owned and shared) */
    uint64_t file_bytes; /* unwritten bytes in file ranges */
} up_outq_t;

/* A point to roll a queue back to (up_outq_truncate). */
typedef struct up_outq_mark_t {
    up_outq_seg_t *tail;
    uint64_t tail_len, bytes, file_bytes;
} up_outq_mark_t;

static inline void up_outq_init(up_outq_t *q)
{
    q->head = q->tail = NULL;
    q->bytes = q->file_bytes = 0;
}

static inline int up_outq_empty(const up_outq_t *q)
{
    return q->head == NULL;
}

/* Contiguous room for n more owned bytes at the tail; up_outq_commit says how many were used. */
char *up_outq_reserve(up_outq_t *q, up_buffer_pool_t *pool, size_t n);
void up_outq_commit(up_outq_t *q, size_t n);
/* Copies len bytes in. */
void up_outq_append(up_outq_t *q, up_buffer_pool_t *pool, const void *data, size_t len);
/* References shared->base[offset..offset+len); takes a reference of its own. */
void up_outq_append_shared(up_outq_t *q, up_shared_t *shared, size_t offset, size_t len);
/* len bytes of fd from offset; the queue owns fd from now on and closes it. */
void up_outq_append_file(up_outq_t *q, int fd, off_t offset, uint64_t len);
/* The same for an fd someone else owns and shares (an open-file cache's): the segment holds a
 * reference to owner, released when written, and never closes fd. */
void up_outq_append_file_ref(up_outq_t *q, up_shared_t *owner, int fd, off_t offset,
                             uint64_t len);
/* Moves everything of src to the end of dst; src is left empty. */
void up_outq_splice(up_outq_t *dst, up_outq_t *src);

/* Writes from the head through conn's transport until it would block, the queue is empty or
 * max bytes went out (so one fast client cannot keep the loop to itself). Frees what was
 * written. Returns the bytes written, or UP_IO_ERROR when the connection broke or a file
 * ended before its range did. */
int64_t up_outq_write(up_outq_t *q, up_buffer_pool_t *pool, const up_transport_t *transport,
                      up_conn_t *conn, size_t max);

/* Copies up to len bytes from the head into buf (file ranges read with pread) and frees what
 * was copied: for a protocol that frames the bytes itself (HTTP/2's DATA). Returns the bytes
 * copied, or UP_IO_ERROR when a file ended before its range did. */
int64_t up_outq_take(up_outq_t *q, up_buffer_pool_t *pool, char *buf, size_t len);

up_outq_mark_t up_outq_mark(const up_outq_t *q);
/* Drops everything appended after mark was taken; nothing of it may have been written. */
void up_outq_truncate(up_outq_t *q, up_buffer_pool_t *pool, up_outq_mark_t mark);
/* Frees every segment, written or not. */
void up_outq_clear(up_outq_t *q, up_buffer_pool_t *pool);

#endif
