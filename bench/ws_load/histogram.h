#ifndef WSL_HISTOGRAM_H
#define WSL_HISTOGRAM_H

/* Latencies in nanoseconds, counted in log-linear buckets: exact below 64 ns, then 64 buckets
 * per power of two (each within 1/64 of its value, so a percentile is within 1.6%). A fixed
 * size whatever the count, so millions of deliveries cost no memory. One per run; one thread. */

#include <stdint.h>

#define WSL_HISTOGRAM_SUB_BITS 6
#define WSL_HISTOGRAM_SUB (1u << WSL_HISTOGRAM_SUB_BITS)
/* Buckets for values up to 2^64 - 1. */
#define WSL_HISTOGRAM_BUCKETS ((64 - WSL_HISTOGRAM_SUB_BITS + 1) * WSL_HISTOGRAM_SUB)

typedef struct {
    uint64_t count;
    uint64_t max;
    uint64_t buckets[WSL_HISTOGRAM_BUCKETS];
} wsl_histogram_t;

void wsl_histogram_add(wsl_histogram_t *h, uint64_t ns);

/* The value at or below which fraction q (0 to 1) of the values lie: the upper end of that
 * value's bucket, never above the largest value added. 0 when nothing was added. */
uint64_t wsl_histogram_percentile(const wsl_histogram_t *h, double q);

#endif
