/* Where a worker's loop runs, chosen by what its app calls do (unless --io-thread or
 * --no-io-thread forces it).
 *
 * App threads taking turns at the loop (thread_pool.c) is the cheapest way for calls that keep
 * the GVL busy: one thread does everything, nothing crosses threads. But while a call waits
 * with the GVL released (a Redis GET, a query, a sleep), nobody reads or writes the worker's
 * sockets; a native thread that runs the loop for good does that beside the wait, at the price
 * of two hand-offs per request. So the question is how much of an app call's time is spent on
 * the CPU: its thread's CPU time over its wall time.
 *
 * One getrusage(RUSAGE_THREAD) before and after a call gives both its CPU time and whether the
 * thread blocked in it (voluntary context switches: IO, a sleep, a lock, the GVL). A call that
 * never blocked counts as all CPU, whatever its wall time: the gap is the kernel giving its
 * core to another process (a load generator on the same cores), which the loop's placement
 * cannot change, and which on short calls would otherwise weigh more than the calls
 * themselves. Waiting for the GVL held by another app thread counts as a block; while the loop
 * has its own thread, the watchdog wakes extra app threads by the same rules as with turns
 * (only for calls that wait or are stuck), so a computing app runs there on one thread and
 * shows its share near 1.
 *
 * A call to a fast local server (a Redis GET) often does not block: the server, woken by the
 * request, preempts the calling thread on its own core and has answered by the time the
 * thread reads (involuntary context switches). Counted as CPU, such calls kept the loop on
 * the app threads although the thread waits for that server on every call, which a loop
 * thread would have used. So a call that was preempted without blocking counts its CPU time
 * over its wall time, the gap capped at PREEMPT_GAP_MAX times its CPU time: a server's answer
 * takes about as long as the call's own work, where a load generator's time slice is longer
 * than a short call by far, and counts for no more than that.
 *
 * getrusage is a system call, so an app call is measured only when it starts SAMPLE_GAP_NS or
 * more after the last one measured started: at most a few hundred a second however many
 * requests a second the worker serves, and every call of a slow one. A window of at
 * least WINDOW_NS and MIN_SAMPLES gives one share: the samples' CPU time over their wall time.
 * Hysteresis: the loop moves to its own thread when the share is below TO_THREAD_BELOW, and
 * back to the app threads when it is above TO_TURNS_ABOVE, each only after VOTES windows in a
 * row say so; between the two bounds it stays where it is, so an app near one bound does not
 * flap. A move that undoes the one before within REVERSAL_NS (a burst of new connections whose
 * first calls connect to a database, a machine busy with other work) doubles the windows the
 * next move needs, up to MAX_VOTES; a move after a longer stay halves them again, down to
 * VOTES. */

#include "binding.h" /* first: ruby.h defines _GNU_SOURCE, which RUSAGE_THREAD needs */
#include <sys/resource.h>

#define SAMPLE_GAP_NS 2000000ull
#define MIN_SAMPLES 8
#define WINDOW_NS 100000000ull
#define TO_THREAD_BELOW 0.5
#define TO_TURNS_ABOVE 0.75
#define VOTES 2
#define MAX_VOTES 32
#define REVERSAL_NS 2000000000ull
#define PREEMPT_GAP_MAX 2

/* This thread's CPU time (user and system) and context switches (voluntary, involuntary); 0
 * when unknown. */
static uint64_t thread_usage(long *blocks, long *preempts)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0) {
        *blocks = *preempts = 0;
        return 0;
    }
    *blocks = ru.ru_nvcsw;
    *preempts = ru.ru_nivcsw;
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000ull +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000ull;
}

void up_rb_placement_init(up_rb_placement_t *p)
{
    *p = (up_rb_placement_t){.last_share = -1, .votes_needed = VOTES};
}

void up_rb_placement_begin(up_rb_server_t *srv, up_rb_call_sample_t *s, uint64_t started_ns)
{
    s->sampled = 0;
    up_rb_placement_t *p = &srv->placement;
    if (srv->loop_policy != UP_RB_LOOP_AUTO || started_ns - p->last_sampled < SAMPLE_GAP_NS)
        return;
    p->last_sampled = started_ns;
    s->sampled = 1;
    s->wall_start = up_rb_now_ns();
    s->cpu_start = thread_usage(&s->blocks_start, &s->preempts_start);
}

/* A window is over: the share it measured moves the loop, after VOTES such windows in a row. */
static void decide(up_rb_server_t *srv, double share)
{
    up_rb_placement_t *p = &srv->placement;
    p->last_share = share;
    int on_thread = atomic_load(&srv->loop_on_thread);
    int move = on_thread ? share > TO_TURNS_ABOVE : share < TO_THREAD_BELOW;
    p->votes = move ? p->votes + 1 : 0;
    if (p->votes < p->votes_needed)
        return;
    uint64_t now = up_rb_now_ns();
    if (p->switches > 0 && now - p->last_switch < REVERSAL_NS)
        p->votes_needed = p->votes_needed * 2 > MAX_VOTES ? MAX_VOTES : p->votes_needed * 2;
    else
        p->votes_needed = p->votes_needed / 2 < VOTES ? VOTES : p->votes_needed / 2;
    p->votes = 0;
    p->last_switch = now;
    p->switches++;
    up_rb_pool_place_loop(srv, !on_thread);
}

void up_rb_placement_end(up_rb_server_t *srv, const up_rb_call_sample_t *s)
{
    if (!s->sampled)
        return;
    long blocks, preempts;
    uint64_t cpu = thread_usage(&blocks, &preempts), now = up_rb_now_ns();
    uint64_t wall = now > s->wall_start ? now - s->wall_start : 0;
    cpu = cpu > s->cpu_start ? cpu - s->cpu_start : 0;
    if (blocks == s->blocks_start) {
        if (preempts == s->preempts_start)
            cpu = wall;
        else if (wall > cpu * (1 + PREEMPT_GAP_MAX))
            wall = cpu * (1 + PREEMPT_GAP_MAX);
    }
    up_rb_placement_t *p = &srv->placement;
    if (p->window_start == 0)
        p->window_start = s->wall_start;
    p->samples++;
    p->wall_ns += wall;
    p->cpu_ns += cpu > wall ? wall : cpu;
    if (p->samples < MIN_SAMPLES || now - p->window_start < WINDOW_NS)
        return;
    double share = p->wall_ns > 0 ? (double)p->cpu_ns / (double)p->wall_ns : 1.0;
    p->samples = 0;
    p->cpu_ns = p->wall_ns = 0;
    p->window_start = 0;
    decide(srv, share > 1.0 ? 1.0 : share);
}

void up_rb_placement_add_stats(up_rb_server_t *srv, VALUE h)
{
    const up_rb_placement_t *p = &srv->placement;
    int on_thread = atomic_load(&srv->loop_on_thread);
    rb_hash_aset(h, ID2SYM(rb_intern("loop_mode")),
                 rb_str_new_cstr(on_thread ? "io_thread" : "app_threads"));
    rb_hash_aset(h, ID2SYM(rb_intern("loop_switches")), ULONG2NUM(p->switches));
    rb_hash_aset(h, ID2SYM(rb_intern("app_cpu_share")),
                 p->last_share < 0 ? Qnil : DBL2NUM(p->last_share));
}
