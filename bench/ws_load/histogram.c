#include "histogram.h"

static unsigned bucket(uint64_t v)
{
    if (v < WSL_HISTOGRAM_SUB)
        return (unsigned)v;
    unsigned top = 63u - (unsigned)__builtin_clzll(v); /* >= WSL_HISTOGRAM_SUB_BITS */
    unsigned shift = top - WSL_HISTOGRAM_SUB_BITS;
    unsigned sub = (unsigned)(v >> shift) & (WSL_HISTOGRAM_SUB - 1);
    return (shift + 1) * WSL_HISTOGRAM_SUB + sub;
}

/* The largest value that falls in bucket i. */
static uint64_t bucket_top(unsigned i)
{
    if (i < WSL_HISTOGRAM_SUB)
        return i;
    unsigned shift = i / WSL_HISTOGRAM_SUB - 1;
    uint64_t sub = i % WSL_HISTOGRAM_SUB;
    uint64_t low = (WSL_HISTOGRAM_SUB + sub) << shift;
    return low + ((uint64_t)1 << shift) - 1;
}

void wsl_histogram_add(wsl_histogram_t *h, uint64_t ns)
{
    h->buckets[bucket(ns)]++;
    h->count++;
    if (ns > h->max)
        h->max = ns;
}

uint64_t wsl_histogram_percentile(const wsl_histogram_t *h, double q)
{
    if (h->count == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)h->count + 0.5);
    if (rank < 1)
        rank = 1;
    if (rank > h->count)
        rank = h->count;
    uint64_t seen = 0;
    for (unsigned i = 0; i < WSL_HISTOGRAM_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank) {
            uint64_t top = bucket_top(i);
            return top < h->max ? top : h->max;
        }
    }
    return h->max;
}
