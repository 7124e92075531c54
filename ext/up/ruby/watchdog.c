/* The watchdog of the app threads (thread_pool.c): a native thread, never touching Ruby, that
 * looks at the pool every millisecond while requests run. When no request has finished for
 * STUCK_NS while requests wait or nobody runs the loop (every awake thread is in the app), it
 * promotes a sleeping thread, which takes the loop and the queued requests, if that can help:
 * when a thread in the app is blocked (asleep in the kernel: IO, sleep, a lock; the GVL is
 * free), or when the calls have run for LONG_NS (then Ruby shares the GVL between threads in
 * time slices). A thread that is running Ruby, or only waiting for a CPU, holds the GVL: a
 * thread woken for it would just wait, at the cost of a third of the throughput (measured with
 * -w 2 on 2 cores, where workers and the client preempt each other). One promotion per period
 * at most, so a burst of slow calls wakes threads one by one, only as many as needed.
 *
 * Calls that wait for IO only briefly (a Redis GET: tens of microseconds) finish often enough
 * never to look stuck, yet each wait leaves the GVL idle while requests queue. So while
 * requests wait and a thread in the app is asleep in the kernel, another is promoted too, at
 * most once per STUCK_NS: examples/json_api served 14% more requests a second (18.4k to 21.0k,
 * 10 interleaved 3 s runs each), hello.ru the same (its calls never sleep). */

#include <string.h>
#include <time.h>
#include <unistd.h>
#include "binding.h"

/* Well above one fast request (tens of microseconds) and a minor GC, well below what a client
 * notices. */
#define STUCK_NS 1000000ull
#define LONG_NS 50000000ull
#define ACTIVE_PERIOD_NS 1000000L
/* With no request in the app, nothing can be stuck: look less often, and after IDLE_LOOKS
 * such looks not at all until a request starts (take_request wakes the watchdog). An idle
 * worker then costs no wake-ups. */
#define IDLE_PERIOD_NS 10000000L
#define IDLE_LOOKS 100

/* Whether a thread in the app sleeps in the kernel (state S or D in its stat), not running or
 * waiting for a CPU (R). A thread whose state cannot be read counts as blocked. */
static int some_thread_blocked(up_rb_server_t *srv)
{
    for (int i = 0; i < srv->num_threads; i++) {
        up_rb_app_thread_t *t = &srv->app_threads[i];
        if (!t->in_app)
            continue;
        char buf[512];
        ssize_t n = t->stat_fd >= 0 ? pread(t->stat_fd, buf, sizeof(buf) - 1, 0) : -1;
        if (n <= 0)
            return 1;
        buf[n] = '\0';
        const char *paren = strrchr(buf, ')'); /* the command name may hold spaces */
        if (paren == NULL || paren[1] != ' ' || paren[2] != 'R')
            return 1;
    }
    return 0;
}

static void *watchdog_main(void *arg)
{
    up_rb_server_t *srv = arg;
    unsigned long last_completed = 0;
    uint64_t last_progress = up_rb_now_ns();
    uint64_t last_promotion = 0;
    long period = IDLE_PERIOD_NS;
    int idle_looks = 0;
    pthread_mutex_lock(&srv->queue_lock);
    while (srv->watchdog_running) {
        if (idle_looks >= IDLE_LOOKS) {
            srv->watchdog_asleep = 1;
            pthread_cond_wait(&srv->watchdog_cond, &srv->queue_lock);
            srv->watchdog_asleep = 0;
            idle_looks = 0;
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
        uint64_t now = up_rb_now_ns();
        unsigned long completed = atomic_load(&srv->completed);
        int awake = srv->num_threads - srv->sleepers + srv->promoted;
        int starved = srv->queue_len > 0 || srv->in_app >= awake;
        period = srv->in_app > 0 ? ACTIVE_PERIOD_NS : IDLE_PERIOD_NS;
        idle_looks = srv->in_app > 0 ? 0 : idle_looks + 1;
        if (srv->queue_len > 0 && srv->sleepers > srv->promoted && now - last_promotion >= STUCK_NS &&
            some_thread_blocked(srv)) {
            /* Requests wait while a call waits for IO (a database, Redis): a second thread
             * serves them meanwhile, though calls still finish. */
            srv->promoted++;
            pthread_cond_signal(&srv->queue_cond);
            last_promotion = now;
            continue;
        }
        if (completed != last_completed || srv->in_app == 0 || !starved) {
            last_completed = completed;
            last_progress = now;
            continue;
        }
        if (now - last_progress >= STUCK_NS && srv->sleepers > srv->promoted &&
            (now - last_progress >= LONG_NS || some_thread_blocked(srv))) {
            srv->promoted++;
            pthread_cond_signal(&srv->queue_cond);
            last_progress = last_promotion = now;
        }
    }
    pthread_mutex_unlock(&srv->queue_lock);
    return NULL;
}

void up_rb_watchdog_start(up_rb_server_t *srv)
{
    if (srv->num_threads < 2)
        return; /* nobody to promote */
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
