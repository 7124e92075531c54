/* The request counters of metrics.h, and their Ruby form for Server#stats. */
#include "binding.h"

/* Prometheus' usual latency buckets, from a millisecond to ten seconds. */
const uint64_t up_rb_metrics_bounds_us[UP_RB_METRICS_BUCKETS] = {
    1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
};

void up_rb_metrics_record(up_rb_metrics_t *m, int status, uint64_t took_ns)
{
    if (!m->enabled)
        return;
    int slot = status >= 100 && status < UP_RB_METRICS_STATUSES ? status : 0;
    atomic_fetch_add_explicit(&m->by_status[slot], 1, memory_order_relaxed);
    uint64_t us = took_ns / 1000;
    int b = 0;
    while (b < UP_RB_METRICS_BUCKETS && us > up_rb_metrics_bounds_us[b])
        b++;
    atomic_fetch_add_explicit(&m->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&m->sum_us, us, memory_order_relaxed);
}

/* Adds to h: statuses ({ 200 => n, ... }, those seen only), duration_bounds (seconds),
 * duration_buckets (counts per bucket, not cumulative, the last one past every bound) and
 * duration_sum (seconds). Nothing when disabled. With the GVL. */
void up_rb_metrics_add_stats(const up_rb_metrics_t *m, VALUE h)
{
    if (!m->enabled)
        return;
    VALUE statuses = rb_hash_new();
    for (int s = 0; s < UP_RB_METRICS_STATUSES; s++) {
        unsigned long n = atomic_load_explicit(&m->by_status[s], memory_order_relaxed);
        if (n > 0)
            rb_hash_aset(statuses, INT2FIX(s), ULONG2NUM(n));
    }
    VALUE bounds = rb_ary_new_capa(UP_RB_METRICS_BUCKETS);
    VALUE buckets = rb_ary_new_capa(UP_RB_METRICS_BUCKETS + 1);
    for (int b = 0; b <= UP_RB_METRICS_BUCKETS; b++) {
        if (b < UP_RB_METRICS_BUCKETS)
            rb_ary_push(bounds, DBL2NUM((double)up_rb_metrics_bounds_us[b] / 1e6));
        rb_ary_push(buckets, ULONG2NUM(atomic_load_explicit(&m->buckets[b], memory_order_relaxed)));
    }
    rb_hash_aset(h, ID2SYM(rb_intern("statuses")), statuses);
    rb_hash_aset(h, ID2SYM(rb_intern("duration_bounds")), bounds);
    rb_hash_aset(h, ID2SYM(rb_intern("duration_buckets")), buckets);
    rb_hash_aset(h, ID2SYM(rb_intern("duration_sum")),
                 DBL2NUM((double)atomic_load_explicit(&m->sum_us, memory_order_relaxed) / 1e6));
}
