#ifndef UP_ACCEPT_SHARE_H
#define UP_ACCEPT_SHARE_H

/* How many connections each worker process holds, in memory the workers share (mapped by the
 * master before it forks them), so that a worker holding more than its part of the connections
 * leaves the next ones to a sibling that holds fewer.
 *
 * The exclusive wake-ups of a shared listening socket go round the workers that sleep in their
 * loop, but a worker that is running takes the connections still queued each time it watches
 * the socket again. On a machine with fewer cores than workers, a burst of connects is then
 * taken by the workers the kernel happens to run: one of four held more than half of 400
 * long-lived connections, and one none. With the counts in shared memory, a worker that holds
 * more than SHARE_RATIO times the connections of a sibling that is alive and accepting stops
 * watching the listeners for a few milliseconds: the connections queued meanwhile go to the
 * siblings, or back to it when none took them. A slot belongs to a worker index; the worker
 * that serves an index writes its own slot only, with single stores (no lock between
 * processes). */

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct up_accept_slot_t {
    _Atomic uint32_t open;      /* connections the worker holds */
    _Atomic uint32_t accepting; /* 1 while it watches the listeners */
    _Atomic uint64_t beat_ms;   /* when it last wrote here (CLOCK_MONOTONIC, ms) */
    char pad[48];               /* a cache line each: every worker writes its own on accepts */
} up_accept_slot_t;

typedef struct up_accept_share_t {
    uint32_t workers;
    up_accept_slot_t slots[];
} up_accept_share_t;

#define UP_ACCEPT_SHARE_MAX_WORKERS 4096
/* How long a worker that holds too many stops watching the listeners. */
#define UP_ACCEPT_SHARE_YIELD_MS 10

/* Maps a zeroed share for workers (1..UP_ACCEPT_SHARE_MAX_WORKERS) that fork children inherit;
 * NULL with errno set. Freed with up_accept_share_free in each process that maps it. */
up_accept_share_t *up_accept_share_new(unsigned workers);
void up_accept_share_free(up_accept_share_t *share);

/* The worker at slot holds open connections and accepts or not; also its sign of life. */
void up_accept_share_publish(up_accept_share_t *share, unsigned slot, size_t open, int accepting);

/* The worker at slot holds open connections now (one closed). */
void up_accept_share_set_open(up_accept_share_t *share, unsigned slot, size_t open);

/* Whether the worker at slot, holding open connections, should leave the next ones to a
 * sibling: one that accepts, wrote its slot lately and holds much fewer. */
int up_accept_share_should_yield(const up_accept_share_t *share, unsigned slot, size_t open);

#endif
