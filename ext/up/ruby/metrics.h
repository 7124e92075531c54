/* Request counters for the metrics endpoint (--metrics-url): responses by status and a
 * histogram of how long requests took, kept by each server when its metrics option is on and
 * read by Server#stats. Any thread records, with relaxed atomic adds: a scrape may see one
 * request counted by status and not yet by duration, never a torn number. */
#ifndef UP_RB_METRICS_H
#define UP_RB_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

/* Statuses 100..599 each have a counter; anything else counts as 0 (a connection closed
 * before a status was sent). */
#define UP_RB_METRICS_STATUSES 600
/* Upper bounds of the duration buckets, in microseconds; one more bucket takes the rest. */
#define UP_RB_METRICS_BUCKETS 13

typedef struct {
    int enabled;
    _Atomic unsigned long by_status[UP_RB_METRICS_STATUSES];
    _Atomic unsigned long buckets[UP_RB_METRICS_BUCKETS + 1]; /* not cumulative */
    _Atomic uint64_t sum_us;
} up_rb_metrics_t;

extern const uint64_t up_rb_metrics_bounds_us[UP_RB_METRICS_BUCKETS];

/* Counts one response with its status and the nanoseconds it took; nothing when disabled. */
void up_rb_metrics_record(up_rb_metrics_t *m, int status, uint64_t took_ns);

#endif
