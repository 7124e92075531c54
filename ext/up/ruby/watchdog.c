/* The watchdog of the app threads (thread_pool.c): a native thread, never touching Ruby, that
 * looks at the pool while requests run (every millisecond, less often while every call only
 * computes; see the end of this comment), runs the loop while no app thread can, and decides
 * how many threads are awake.
 *
 * - Sitting. When every awake app thread has been in the app for STUCK_NS without a request
 *   finishing, nobody runs the loop: the watchdog takes it and runs turns itself (a turn
 *   needs no GVL), so the worker's other connections are still read, written and accepted
 *   while a request computes or blocks, with -t 1 too. Requests it finds wait in the queue.
 *   The first app thread with nothing to do asks for the loop back (sleep_nogvl), and the
 *   watchdog hands it over with a promotion.
 *
 * More than one thread helps only while a call leaves the GVL free: waiting for IO (a database,
 * Redis, an HTTP call) or asleep. A thread that is running Ruby holds the GVL, and one that
 * waits for the GVL would only be joined by another waiting for it: threads that take turns
 * at the GVL cost a third of the throughput of one thread doing it all (measured with -w 2 on
 * 2 cores, and on examples/rails: 1,346 req/s with -t 5 against 1,575 with -t 1). So:
 *
 * - Promotion. When no request has finished for STUCK_NS while requests wait (or nobody runs
 *   the loop), a sleeping thread is promoted, and takes the loop and the queued requests, if a
 *   thread in the app is in IO, or every one has waited in the kernel for a lock, a sleep or
 *   the GVL in two looks in a row (a wait for the GVL held by the loop's turn or another
 *   Ruby thread lasts well under a look's period, so one look proves nothing), or the calls
 *   have run for LONG_NS (then Ruby shares the GVL between threads in time slices).
 * - Short IO waits. Calls that wait for IO only briefly (a Redis GET: tens of microseconds)
 *   finish often enough never to look stuck, yet each wait leaves the GVL idle while requests
 *   queue. So while requests wait and a thread in the app is in IO, another is promoted too,
 *   at most once per STUCK_NS: examples/json_api served 14% more requests a second (18.4k to
 *   21.0k, 10 interleaved 3 s runs each).
 * - Demotion. When more than one thread is awake and no look has seen IO for DEMOTE_NS, one
 *   thread goes back to sleep (at most one per DEMOTE_NS), so threads woken for a burst of
 *   slow calls do not go on taking turns at the GVL once the calls are fast again. A thread
 *   in a call longer than DEMOTE_NS (a long poll waiting on a Queue) takes no turns: it does
 *   not count as awake here, lest the one thread serving the rest be sent to sleep. And when
 *   calls get stuck soon after a demotion (they sleep, or wait on locks), the thread was
 *   needed: the next demotion waits twice as long, up to DEMOTE_MAX_NS, and half as long
 *   again after each demotion that holds.
 *
 * One promotion per period at most, so a burst of slow calls wakes threads one by one, only as
 * many as needed.
 *
 * Each look wakes the watchdog, which preempts whatever runs on that core: every millisecond,
 * that was three context switches per examples/rails request (5.1 with -t 5 against 2.0 with
 * -t 1) and 5% of its throughput. So while the looks find every call running Ruby, they come
 * less and less often, down to one per QUIET_PERIOD_NS; the first that finds a call waiting
 * brings back one a millisecond. A call that starts to wait after a long computation is
 * noticed that much later. */

#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "binding.h"

/* Well above one fast request (tens of microseconds) and a minor GC, well below what a client
 * notices. */
#define STUCK_NS 1000000ull
#define LONG_NS 50000000ull
/* Long enough that an app doing IO on most requests keeps its threads (it shows IO in most
 * looks), short enough to give up extra threads within a fraction of a second. */
#define DEMOTE_NS 20000000ull
#define DEMOTE_MAX_NS 1280000000ull
#define ACTIVE_PERIOD_NS 1000000L
#define QUIET_PERIOD_NS 8000000L
/* With no request in the app, nothing can be stuck: look less often, and after IDLE_LOOKS
 * such looks not at all until a request starts (take_request wakes the watchdog). An idle
 * worker then costs no wake-ups. */
#define IDLE_PERIOD_NS 10000000L
#define IDLE_LOOKS 100

typedef enum thread_state_t {
    THREAD_RUNNING, /* on a CPU or waiting for one: it holds the GVL */
    THREAD_WAITING, /* in futex: the GVL, a Mutex, a ConditionVariable, sleep */
    THREAD_IN_IO    /* in any other call (read, poll, select...), or a page fault */
} thread_state_t;

/* /proc/self/task/TID/syscall reads "running", or the number of the call the thread waits in
 * and its arguments ("-1 ..." outside a call). futex is where Ruby parks a thread for anything
 * but IO. A thread whose state cannot be read counts as in IO: promoting it is the safe side.
 * That is every thread under Ruby's M:N threads (srv->thread_looks off), where a Ruby thread
 * has no native thread of its own to look at: the watchdog then wakes a thread whenever
 * requests wait and keeps it, as if every call waited for IO, and never sends one back to
 * sleep (every thread awake, as under Puma). */
static thread_state_t thread_state(const up_rb_app_thread_t *t)
{
    char buf[256];
    ssize_t n = t->syscall_fd >= 0 ? pread(t->syscall_fd, buf, sizeof(buf) - 1, 0) : -1;
    if (n <= 0)
        return THREAD_IN_IO;
    buf[n] = '\0';
    if (strncmp(buf, "running", 7) == 0)
        return THREAD_RUNNING;
    char *end;
    long nr = strtol(buf, &end, 10);
    if (end == buf)
        return THREAD_IN_IO;
    return nr == SYS_futex ? THREAD_WAITING : THREAD_IN_IO;
}

typedef struct look_t {
    int not_running; /* some thread in the app waits, for IO or in futex */
    int in_io;       /* some thread in the app waits for IO */
    int all_waiting; /* every thread in the app waits in the kernel (none runs), and one is there */
} look_t;

static look_t look_at_threads(up_rb_server_t *srv)
{
    look_t look = {0, 0, 0};
    int running = 0, seen = 0;
    for (int i = 0; i < srv->num_threads; i++) {
        up_rb_app_thread_t *t = &srv->app_threads[i];
        if (!t->in_app)
            continue;
        seen++;
        switch (thread_state(t)) {
        case THREAD_RUNNING:
            running++;
            break;
        case THREAD_IN_IO:
            look.in_io = 1;
            break;
        case THREAD_WAITING:
            break;
        }
    }
    look.not_running = running < seen;
    look.all_waiting = seen > 0 && running == 0;
    return look;
}

/* Threads in a call that has run for DEMOTE_NS or more. */
static int long_calls(up_rb_server_t *srv, uint64_t now)
{
    int count = 0;
    for (int i = 0; i < srv->num_threads; i++) {
        up_rb_app_thread_t *t = &srv->app_threads[i];
        if (t->in_app && now - t->call_started >= DEMOTE_NS)
            count++;
    }
    return count;
}

/* The watchdog's memory between looks. */
typedef struct watch_t {
    unsigned long last_completed;
    uint64_t last_progress;  /* a request finished, or nothing was waiting */
    uint64_t last_promotion;
    uint64_t last_io;        /* a look saw IO, or a thread was promoted or demoted */
    uint64_t last_demotion;  /* 0 before the first */
    uint64_t demote_ns;      /* how long without IO before a demotion */
    int waited;              /* the last look saw every call in the app waiting, no progress since */
} watch_t;

/* stalled: for calls stuck without IO (asleep, on locks): if a demotion came just before, it
 * was a mistake, and the next one waits twice as long. IO after a demotion is a change in the
 * calls, not a mistake: the thread is woken and the wait stays. */
static void promote(up_rb_server_t *srv, watch_t *w, uint64_t now, int stalled)
{
    srv->promoted++;
    srv->promotions++;
    srv->demoted = 0;
    pthread_cond_signal(&srv->queue_cond);
    if (stalled && w->last_demotion != 0 && now - w->last_demotion < w->demote_ns &&
        w->demote_ns < DEMOTE_MAX_NS)
        w->demote_ns *= 2;
}

/* A demotion; the one before it held (no promotion since), so the wait halves back towards
 * DEMOTE_NS: an app that stalled after demotions once is not held to that forever. */
static void demote(up_rb_server_t *srv, watch_t *w, uint64_t now)
{
    srv->demoted++;
    srv->demotions++;
    if (w->last_demotion != 0 && w->last_promotion < w->last_demotion && w->demote_ns > DEMOTE_NS)
        w->demote_ns /= 2;
    w->last_io = w->last_demotion = now;
}

/* The loop: taken when nobody runs it and every awake thread is stuck in the app (never while
 * it is placed on its own thread: that one runs it); queue_lock held. trylock, as everywhere: app threads take queue_lock while they hold the loop. */
static void sit_down_if_needed(up_rb_server_t *srv, watch_t *w, uint64_t now)
{
    int awake = up_rb_awake_threads(srv);
    if (srv->sitting || atomic_load(&srv->loop_on_thread) || srv->in_app == 0 || srv->in_app < awake ||
        now - w->last_progress < STUCK_NS || atomic_load(&srv->finished))
        return;
    if (pthread_mutex_trylock(&srv->loop_lock) != 0)
        return;
    up_loop_set_owner(srv->loop, 1);
    srv->sitting = 1;
    srv->sittings++;
}

/* Gives the loop back; queue_lock held. An app thread that asked, or (when every thread is
 * asleep) any, is promoted to take it, so the loop and the queue always have someone. */
static void stand_up(up_rb_server_t *srv)
{
    int awake = up_rb_awake_threads(srv);
    if ((srv->loop_wanted > 0 || awake == 0) && srv->sleepers > srv->promoted) {
        srv->promoted++;
        pthread_cond_signal(&srv->queue_cond);
    }
    srv->loop_wanted = 0;
    srv->sitting = 0;
    up_loop_set_owner(srv->loop, 0);
    pthread_mutex_unlock(&srv->loop_lock);
}

/* One turn of the loop while sitting, waiting at most wait_ns for events; queue_lock held, and
 * released during the turn (a turn takes it to queue requests). Stands up when an app thread
 * wants the loop back. */
static void sitting_turn(up_rb_server_t *srv, uint64_t wait_ns)
{
    pthread_mutex_unlock(&srv->queue_lock);
    up_rb_turn(srv, (int)((wait_ns + 999999) / 1000000));
    pthread_mutex_lock(&srv->queue_lock);
    int awake = up_rb_awake_threads(srv);
    if (srv->loop_wanted > 0 || awake == 0 || atomic_load(&srv->finished) ||
        atomic_load(&srv->loop_on_thread))
        stand_up(srv);
}

/* One look, under queue_lock. Returns whether to look again soon: a call was waiting, or a
 * thread was promoted or demoted. */
static int watch(up_rb_server_t *srv, watch_t *w, uint64_t now)
{
    unsigned long completed = atomic_load(&srv->completed);
    int awake = up_rb_awake_threads(srv);
    int starved = srv->queue_len > 0 || srv->in_app >= awake;
    int can_promote = srv->sleepers > srv->promoted;
    int progress = completed != w->last_completed || srv->in_app == 0 || !starved;
    if (progress) {
        w->last_completed = completed;
        w->last_progress = now;
        w->waited = 0;
    }
    int stuck = !progress && now - w->last_progress >= STUCK_NS;
    int short_waits = srv->queue_len > 0 && now - w->last_promotion >= STUCK_NS;
    int may_demote =
        now - w->last_io >= w->demote_ns && awake - srv->demoted - long_calls(srv, now) > 1;
    if (srv->in_app == 0 || !(can_promote || may_demote))
        return 0;
    look_t look = look_at_threads(srv);
    if (look.in_io)
        w->last_io = now;
    int waited = w->waited;
    w->waited = stuck && look.all_waiting;
    if (can_promote && ((stuck && (look.in_io || (look.all_waiting && waited) ||
                                   now - w->last_progress >= LONG_NS)) ||
                        (short_waits && look.in_io))) {
        promote(srv, w, now, stuck && !look.in_io);
        w->last_promotion = w->last_io = now;
        if (stuck)
            w->last_progress = now;
        w->waited = 0;
        return 1;
    }
    if (may_demote && !look.in_io) {
        demote(srv, w, now);
        return 1;
    }
    return look.not_running;
}

static void *watchdog_main(void *arg)
{
    up_rb_server_t *srv = arg;
    uint64_t start = up_rb_now_ns();
    watch_t w = {0, start, 0, start, 0, DEMOTE_NS, 0};
    long period = IDLE_PERIOD_NS;
    uint64_t next_look = 0;
    int idle_looks = 0;
    pthread_mutex_lock(&srv->queue_lock);
    while (srv->watchdog_running) {
        if (srv->sitting) {
            uint64_t now = up_rb_now_ns();
            sitting_turn(srv, next_look > now ? next_look - now : 0);
            /* A turn ends at its first events: the looks (a read of /proc per thread in the
             * app) keep their period rather than follow every turn. */
            if (srv->sitting && up_rb_now_ns() < next_look)
                continue;
        } else if (idle_looks >= IDLE_LOOKS) {
            srv->watchdog_asleep = 1;
            pthread_cond_wait(&srv->watchdog_cond, &srv->queue_lock);
            srv->watchdog_asleep = 0;
            idle_looks = 0;
            /* Nothing was in the app while it slept: the call that woke it has just started,
             * not run since the last look (that would wake a thread for it after LONG_NS). */
            w.last_progress = up_rb_now_ns();
        } else {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += period;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&srv->watchdog_cond, &srv->queue_lock, &ts);
        }
        idle_looks = srv->in_app > 0 || srv->sitting ? 0 : idle_looks + 1;
        uint64_t now = up_rb_now_ns();
        int busy = watch(srv, &w, now);
        sit_down_if_needed(srv, &w, now);
        if (srv->in_app == 0)
            period = IDLE_PERIOD_NS;
        else if (busy || period == IDLE_PERIOD_NS)
            period = ACTIVE_PERIOD_NS;
        else if (period < QUIET_PERIOD_NS)
            period *= 2;
        next_look = now + (uint64_t)period;
    }
    if (srv->sitting)
        stand_up(srv);
    pthread_mutex_unlock(&srv->queue_lock);
    return NULL;
}

void up_rb_watchdog_start(up_rb_server_t *srv)
{
    if (srv->loop_policy == UP_RB_LOOP_THREAD)
        return; /* the loop has its own thread for good, and publish wakes app threads */
    srv->watchdog_running = 1;
    if (pthread_create(&srv->watchdog, NULL, watchdog_main, srv) != 0) {
        srv->watchdog_running = 0;
        rb_sys_fail("starting the app threads' watchdog");
    }
}

void up_rb_watchdog_stop(up_rb_server_t *srv)
{
    if (!srv->watchdog_running)
        return;
    pthread_mutex_lock(&srv->queue_lock);
    srv->watchdog_running = 0;
    pthread_cond_broadcast(&srv->watchdog_cond);
    pthread_mutex_unlock(&srv->queue_lock);
    pthread_join(srv->watchdog, NULL);
}
