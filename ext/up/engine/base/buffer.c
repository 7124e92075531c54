#include <stdlib.h>
#include <string.h>
#include "base/buffer.h"
#include "base/memory.h"

void up_buffer_pool_init(up_buffer_pool_t *pool)
{
    pthread_mutex_init(&pool->lock, NULL);
    pool->free_list = NULL;
    pool->count = 0;
}

void up_buffer_pool_dispose(up_buffer_pool_t *pool)
{
    while (pool->free_list != NULL) {
        void *chunk = pool->free_list;
        pool->free_list = *(void **)chunk;
        free(chunk);
    }
    pool->count = 0;
    pthread_mutex_destroy(&pool->lock);
}

char *up_buffer_pool_take(up_buffer_pool_t *pool)
{
    pthread_mutex_lock(&pool->lock);
    void *chunk = pool->free_list;
    if (chunk != NULL) {
        pool->free_list = *(void **)chunk;
        pool->count--;
    }
    pthread_mutex_unlock(&pool->lock);
    return chunk != NULL ? chunk : up_malloc(UP_BUFFER_CHUNK);
}

/* Returns 1 when the pool kept the chunk. */
static int pool_keep(up_buffer_pool_t *pool, char *chunk)
{
    int kept = 0;
    pthread_mutex_lock(&pool->lock);
    if (pool->count < UP_BUFFER_POOL_MAX) {
        *(void **)chunk = pool->free_list;
        pool->free_list = chunk;
        pool->count++;
        kept = 1;
    }
    pthread_mutex_unlock(&pool->lock);
    return kept;
}

void up_buffer_pool_give(up_buffer_pool_t *pool, char *chunk)
{
    if (!pool_keep(pool, chunk))
        free(chunk);
}

char *up_buffer_reserve(up_buffer_t *buf, up_buffer_pool_t *pool, size_t extra)
{
    if (buf->base == NULL) {
        if (extra <= UP_BUFFER_CHUNK) {
            buf->base = up_buffer_pool_take(pool);
            buf->cap = UP_BUFFER_CHUNK;
        } else {
            buf->base = up_malloc(extra);
            buf->cap = extra;
        }
        buf->len = 0;
        return buf->base;
    }
    if (buf->cap - buf->len < extra) {
        size_t cap = buf->cap * 2;
        while (cap - buf->len < extra)
            cap *= 2;
        buf->base = up_realloc(buf->base, cap);
        buf->cap = cap;
    }
    return buf->base + buf->len;
}

void up_buffer_append(up_buffer_t *buf, up_buffer_pool_t *pool, const void *src, size_t len)
{
    char *dst = up_buffer_reserve(buf, pool, len);
    memcpy(dst, src, len);
    buf->len += len;
}

void up_buffer_consume(up_buffer_t *buf, size_t n)
{
    if (n >= buf->len) {
        buf->len = 0;
        return;
    }
    memmove(buf->base, buf->base + n, buf->len - n);
    buf->len -= n;
}

void up_buffer_release(up_buffer_t *buf, up_buffer_pool_t *pool)
{
    if (buf->base != NULL && !(buf->cap == UP_BUFFER_CHUNK && pool_keep(pool, buf->base)))
        free(buf->base);
    buf->base = NULL;
    buf->len = 0;
    buf->cap = 0;
}
