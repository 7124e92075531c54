/* The output queue; see outq.h for the contract. */

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "base/memory.h"
#include "core/outq.h"

/* iovecs gathered for one writev: enough for many pipelined responses, small on the stack. */
#define MAX_IOV 64
/* One sendfile call sends at most this much, so the byte cap per event is kept. */
#define MAX_SENDFILE (1u << 30)

enum { SEG_BYTES, SEG_SHARED, SEG_FILE };

struct up_outq_seg_t {
    up_outq_seg_t *next;
    int kind;
    int pooled;   /* SEG_BYTES: this header starts a chunk of the buffer pool */
    uint64_t pos; /* bytes already written */
    uint64_t len; /* bytes in the segment */
    union {
        struct {
            char *data; /* right after this header, in the same block */
            size_t cap;
        } bytes;
        struct {
            up_shared_t *shared;
            const char *base;
        } shared;
        struct {
            int fd;
            off_t offset;        /* of byte 0 of the segment */
            up_shared_t *owner; /* NULL: the segment owns fd */
        } file;
    } u;
};

/* ---------------------------------------------------------------- shared slices */

void up_shared_init(up_shared_t *shared, const char *base, size_t len,
                    void (*dispose)(up_shared_t *shared))
{
    shared->base = base;
    shared->len = len;
    shared->dispose = dispose;
    atomic_init(&shared->_refs, 1);
}

void up_shared_retain(up_shared_t *shared)
{
    atomic_fetch_add_explicit(&shared->_refs, 1, memory_order_relaxed);
}

void up_shared_release(up_shared_t *shared)
{
    if (atomic_fetch_sub_explicit(&shared->_refs, 1, memory_order_acq_rel) == 1)
        shared->dispose(shared);
}

/* ---------------------------------------------------------------- segments */

static void link_seg(up_outq_t *q, up_outq_seg_t *seg)
{
    seg->next = NULL;
    if (q->tail != NULL)
        q->tail->next = seg;
    else
        q->head = seg;
    q->tail = seg;
}

static up_outq_seg_t *new_bytes_seg(up_buffer_pool_t *pool, size_t need)
{
    up_outq_seg_t *seg;
    if (need <= UP_BUFFER_CHUNK - sizeof(*seg)) {
        seg = (up_outq_seg_t *)up_buffer_pool_take(pool);
        seg->pooled = 1;
        seg->u.bytes.cap = UP_BUFFER_CHUNK - sizeof(*seg);
    } else {
        seg = up_malloc(sizeof(*seg) + need);
        seg->pooled = 0;
        seg->u.bytes.cap = need;
    }
    seg->kind = SEG_BYTES;
    seg->pos = seg->len = 0;
    seg->u.bytes.data = (char *)(seg + 1);
    return seg;
}

static void free_seg(up_outq_seg_t *seg, up_buffer_pool_t *pool)
{
    switch (seg->kind) {
    case SEG_BYTES:
        if (seg->pooled) {
            up_buffer_pool_give(pool, (char *)seg);
            return;
        }
        break;
    case SEG_SHARED:
        up_shared_release(seg->u.shared.shared);
        break;
    case SEG_FILE:
        if (seg->u.file.owner != NULL)
            up_shared_release(seg->u.file.owner);
        else
            close(seg->u.file.fd);
        break;
    }
    free(seg);
}

/* ---------------------------------------------------------------- appending */

char *up_outq_reserve(up_outq_t *q, up_buffer_pool_t *pool, size_t n)
{
    up_outq_seg_t *t = q->tail;
    if (t == NULL || t->kind != SEG_BYTES || t->u.bytes.cap - t->len < n) {
        t = new_bytes_seg(pool, n);
        link_seg(q, t);
    }
    return t->u.bytes.data + t->len;
}

void up_outq_commit(up_outq_t *q, size_t n)
{
    q->tail->len += n;
    q->bytes += n;
}

void up_outq_append(up_outq_t *q, up_buffer_pool_t *pool, const void *data, size_t len)
{
    const char *src = data;
    up_outq_seg_t *t = q->tail;
    /* Fill what is left of the tail chunk first, then take one block for the rest. */
    if (t != NULL && t->kind == SEG_BYTES && t->len < t->u.bytes.cap) {
        size_t room = t->u.bytes.cap - (size_t)t->len;
        size_t n = len < room ? len : room;
        memcpy(t->u.bytes.data + t->len, src, n);
        up_outq_commit(q, n);
        src += n;
        len -= n;
    }
    if (len > 0) {
        memcpy(up_outq_reserve(q, pool, len), src, len);
        up_outq_commit(q, len);
    }
}

/* A segment that only points at its bytes (shared, file): a small header of its own. */
static up_outq_seg_t *new_ref_seg(int kind, uint64_t len)
{
    up_outq_seg_t *seg = up_malloc(sizeof(*seg));
    seg->kind = kind;
    seg->pooled = 0;
    seg->pos = 0;
    seg->len = len;
    return seg;
}

void up_outq_append_shared(up_outq_t *q, up_shared_t *shared, size_t offset, size_t len)
{
    if (len == 0)
        return;
    up_outq_seg_t *seg = new_ref_seg(SEG_SHARED, len);
    seg->u.shared.shared = shared;
    seg->u.shared.base = shared->base + offset;
    up_shared_retain(shared);
    link_seg(q, seg);
    q->bytes += len;
}

void up_outq_append_file(up_outq_t *q, int fd, off_t offset, uint64_t len)
{
    if (len == 0) {
        close(fd);
        return;
    }
    up_outq_seg_t *seg = new_ref_seg(SEG_FILE, len);
    seg->u.file.fd = fd;
    seg->u.file.offset = offset;
    seg->u.file.owner = NULL;
    link_seg(q, seg);
    q->file_bytes += len;
}

void up_outq_append_file_ref(up_outq_t *q, up_shared_t *owner, int fd, off_t offset,
                             uint64_t len)
{
    if (len == 0)
        return;
    up_outq_seg_t *seg = new_ref_seg(SEG_FILE, len);
    seg->u.file.fd = fd;
    seg->u.file.offset = offset;
    seg->u.file.owner = owner;
    up_shared_retain(owner);
    link_seg(q, seg);
    q->file_bytes += len;
}

void up_outq_splice(up_outq_t *dst, up_outq_t *src)
{
    if (src->head == NULL)
        return;
    if (dst->tail != NULL)
        dst->tail->next = src->head;
    else
        dst->head = src->head;
    dst->tail = src->tail;
    dst->bytes += src->bytes;
    dst->file_bytes += src->file_bytes;
    up_outq_init(src);
}

/* ---------------------------------------------------------------- writing */

/* Drops written segments (and empty ones) from the head after n more bytes went out. */
static void advance(up_outq_t *q, up_buffer_pool_t *pool, uint64_t n)
{
    while (q->head != NULL && (n > 0 || q->head->pos == q->head->len)) {
        up_outq_seg_t *seg = q->head;
        uint64_t left = seg->len - seg->pos;
        uint64_t take = n < left ? n : left;
        seg->pos += take;
        n -= take;
        if (seg->kind == SEG_FILE)
            q->file_bytes -= take;
        else
            q->bytes -= take;
        if (seg->pos < seg->len)
            return;
        q->head = seg->next;
        if (q->head == NULL)
            q->tail = NULL;
        free_seg(seg, pool);
    }
}

int64_t up_outq_take(up_outq_t *q, up_buffer_pool_t *pool, char *buf, size_t len)
{
    size_t done = 0;
    while (done < len && q->head != NULL) {
        up_outq_seg_t *seg = q->head;
        uint64_t left = seg->len - seg->pos;
        size_t n = left < len - done ? (size_t)left : len - done;
        if (seg->kind == SEG_FILE) {
            ssize_t r;
            do {
                r = pread(seg->u.file.fd, buf + done, n, seg->u.file.offset + (off_t)seg->pos);
            } while (r < 0 && errno == EINTR);
            if (r <= 0)
                return UP_IO_ERROR; /* a file that ended before its range did */
            n = (size_t)r;
        } else {
            const char *src = seg->kind == SEG_BYTES ? seg->u.bytes.data : seg->u.shared.base;
            memcpy(buf + done, src + seg->pos, n);
        }
        done += n;
        advance(q, pool, n);
    }
    return (int64_t)done;
}

/* One writev of the memory segments at the head, at most max bytes. */
static ssize_t write_memory(up_outq_t *q, const up_transport_t *transport, up_conn_t *conn,
                            size_t max)
{
    struct iovec iov[MAX_IOV];
    int n = 0;
    size_t total = 0;
    for (up_outq_seg_t *seg = q->head; seg != NULL && seg->kind != SEG_FILE && n < MAX_IOV &&
                                       total < max;
         seg = seg->next) {
        const char *base = seg->kind == SEG_BYTES ? seg->u.bytes.data : seg->u.shared.base;
        size_t len = (size_t)(seg->len - seg->pos);
        if (len > max - total)
            len = max - total;
        iov[n].iov_base = (void *)(base + seg->pos);
        iov[n].iov_len = len;
        total += len;
        n++;
    }
    return transport->writev(conn, iov, n);
}

static ssize_t write_file(up_outq_t *q, const up_transport_t *transport, up_conn_t *conn,
                          size_t max)
{
    up_outq_seg_t *seg = q->head;
    uint64_t left = seg->len - seg->pos;
    size_t want = left < max ? (size_t)left : max;
    if (want > MAX_SENDFILE)
        want = MAX_SENDFILE;
    off_t offset = seg->u.file.offset + (off_t)seg->pos;
    ssize_t r = transport->sendfile(conn, seg->u.file.fd, &offset, want);
    if (r == 0)
        return UP_IO_ERROR; /* the file shrank: its promised length cannot be kept */
    return r;
}

int64_t up_outq_write(up_outq_t *q, up_buffer_pool_t *pool, const up_transport_t *transport,
                      up_conn_t *conn, size_t max)
{
    int64_t written = 0;
    while (q->head != NULL && (size_t)written < max) {
        size_t budget = max - (size_t)written;
        ssize_t r = q->head->kind == SEG_FILE ? write_file(q, transport, conn, budget)
                                               : write_memory(q, transport, conn, budget);
        if (r == UP_IO_AGAIN)
            break;
        if (r < 0)
            return UP_IO_ERROR;
        advance(q, pool, (uint64_t)r);
        written += r;
        if (r == 0 && q->head != NULL && q->head->pos < q->head->len)
            break; /* took nothing yet did not say it would block: try again on the next event */
    }
    return written;
}

/* ---------------------------------------------------------------- rollback, clearing */

up_outq_mark_t up_outq_mark(const up_outq_t *q)
{
    up_outq_mark_t mark = {q->tail, q->tail != NULL ? q->tail->len : 0, q->bytes, q->file_bytes};
    return mark;
}

void up_outq_truncate(up_outq_t *q, up_buffer_pool_t *pool, up_outq_mark_t mark)
{
    up_outq_seg_t *rest;
    if (mark.tail == NULL) {
        rest = q->head;
        q->head = NULL;
    } else {
        rest = mark.tail->next;
        mark.tail->next = NULL;
        mark.tail->len = mark.tail_len;
    }
    q->tail = mark.tail;
    q->bytes = mark.bytes;
    q->file_bytes = mark.file_bytes;
    while (rest != NULL) {
        up_outq_seg_t *next = rest->next;
        free_seg(rest, pool);
        rest = next;
    }
}

void up_outq_clear(up_outq_t *q, up_buffer_pool_t *pool)
{
    up_outq_mark_t empty = {NULL, 0, 0, 0};
    up_outq_truncate(q, pool, empty);
}
