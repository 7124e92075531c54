/* Connection counts shared by the worker processes (accept_share.h). */

#include "core/accept_share.h"
#include <errno.h>
#include <sys/mman.h>
#include <time.h>

/* A worker holding more than a sibling times SHARE_RATIO_NUM / SHARE_RATIO_DEN, plus SLACK, yields
 * to it: loose enough that short connections coming and going do not make workers yield to each
 * other back and forth, tight enough that none of them holds much more than its part. */
#define SHARE_RATIO_NUM 3
#define SHARE_RATIO_DEN 2
#define SLACK 4
/* A slot not written for this long is a worker that is gone, stuck, or not yet booted (each
 * writes its slot at least once a second, on its tick): nothing is left to it. */
#define FRESH_MS 3000

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static size_t share_size(unsigned workers)
{
    return sizeof(up_accept_share_t) + (size_t)workers * sizeof(up_accept_slot_t);
}

up_accept_share_t *up_accept_share_new(unsigned workers)
{
    if (workers < 1 || workers > UP_ACCEPT_SHARE_MAX_WORKERS) {
        errno = EINVAL;
        return NULL;
    }
    void *p = mmap(NULL, share_size(workers), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    up_accept_share_t *share = p; /* zeroed by the kernel: no worker accepts yet */
    share->workers = workers;
    return share;
}

void up_accept_share_free(up_accept_share_t *share)
{
    if (share != NULL)
        munmap(share, share_size(share->workers));
}

static uint32_t clamp(size_t open)
{
    return open > UINT32_MAX ? UINT32_MAX : (uint32_t)open;
}

void up_accept_share_set_open(up_accept_share_t *share, unsigned slot, size_t open)
{
    if (slot < share->workers)
        atomic_store_explicit(&share->slots[slot].open, clamp(open), memory_order_relaxed);
}

void up_accept_share_publish(up_accept_share_t *share, unsigned slot, size_t open, int accepting)
{
    if (slot >= share->workers)
        return;
    up_accept_slot_t *s = &share->slots[slot];
    atomic_store_explicit(&s->open, clamp(open), memory_order_relaxed);
    atomic_store_explicit(&s->accepting, accepting != 0, memory_order_relaxed);
    atomic_store_explicit(&s->beat_ms, now_ms(), memory_order_relaxed);
}

int up_accept_share_should_yield(const up_accept_share_t *share, unsigned slot, size_t open)
{
    if (open <= SLACK || slot >= share->workers)
        return 0;
    uint64_t now = now_ms();
    for (unsigned i = 0; i < share->workers; i++) {
        const up_accept_slot_t *s = &share->slots[i];
        if (i == slot || !atomic_load_explicit(&s->accepting, memory_order_relaxed))
            continue;
        uint64_t beat = atomic_load_explicit(&s->beat_ms, memory_order_relaxed);
        if (beat + FRESH_MS < now)
            continue;
        uint64_t theirs = atomic_load_explicit(&s->open, memory_order_relaxed);
        if ((uint64_t)open * SHARE_RATIO_DEN > theirs * SHARE_RATIO_NUM + SLACK * SHARE_RATIO_DEN)
            return 1;
    }
    return 0;
}
