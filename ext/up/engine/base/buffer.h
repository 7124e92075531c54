#ifndef UP_BUFFER_H
#define UP_BUFFER_H

/* Growable byte buffers and the pool that recycles them.
 *
 * A connection borrows its read and write buffers from its server's pool only while it has
 * bytes in them, so an idle keep-alive connection holds no buffer at all (10,000 idle
 * connections must fit in a few MB). Buffers of the pool's chunk size go back on a free list;
 * a buffer that had to grow past it (a big header block, a large response) is freed instead,
 * so one big request does not pin memory forever. */

#include <pthread.h>
#include <stddef.h>

#define UP_BUFFER_CHUNK 16384
/* How many free chunks the pool keeps; past that, returned chunks are freed. */
#define UP_BUFFER_POOL_MAX 256

typedef struct up_buffer_t {
    char *base; /* NULL while the buffer holds nothing */
    size_t len;
    size_t cap;
} up_buffer_t;

/* The pool is shared by the loop thread and the app threads that write responses, hence the
 * lock; it is held only to pop or push one chunk. */
typedef struct up_buffer_pool_t {
    pthread_mutex_t lock;
    void *free_list; /* singly linked through the first word of each chunk */
    size_t count;
} up_buffer_pool_t;

void up_buffer_pool_init(up_buffer_pool_t *pool);
void up_buffer_pool_dispose(up_buffer_pool_t *pool);
/* A block of UP_BUFFER_CHUNK bytes, and its return (freed when the pool is full). Any thread. */
char *up_buffer_pool_take(up_buffer_pool_t *pool);
void up_buffer_pool_give(up_buffer_pool_t *pool, char *chunk);

/* Makes room for at least `extra` more bytes after buf->len, taking a chunk from the pool when
 * the buffer is empty and growing it geometrically otherwise. Returns buf->base + buf->len. */
char *up_buffer_reserve(up_buffer_t *buf, up_buffer_pool_t *pool, size_t extra);
void up_buffer_append(up_buffer_t *buf, up_buffer_pool_t *pool, const void *src, size_t len);
/* Drops the first n bytes (memmove of the rest). */
void up_buffer_consume(up_buffer_t *buf, size_t n);
/* Gives the memory back (to the pool when it is a plain chunk); buf becomes empty. */
void up_buffer_release(up_buffer_t *buf, up_buffer_pool_t *pool);

#endif
