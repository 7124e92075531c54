/* The app threads of -t N, and who runs the loop.
 *
 * Threads share one GVL, so the fastest way to serve an app that never blocks is one thread
 * doing everything in turn: a loop turn (read, parse, write), then the app calls for the
 * requests it found, then the next turn; a second thread woken for a request the first would
 * have taken microseconds later only waits for the GVL, and handing requests from a loop
 * thread to an app thread costs wake-ups and cache misses on every one. So each app thread
 * runs this cycle itself: whoever holds loop_lock runs turns, requests go to a queue, and a
 * thread takes the next request the moment it finishes one. In steady state one thread does
 * it all and the others sleep: measured as fast as calling the app from inside the loop's
 * dispatch, which this replaced (-t 0 now means one thread).
 *
 * When the running threads are stuck in the app (a sleep, a query, a long computation), the
 * watchdog (watchdog.c) promotes a sleeping thread: it takes the loop and the queued requests,
 * so a blocking call holds up no other request; once no call waits for IO any more, it sends
 * the extra threads back to sleep one by one. -t N bounds how many requests run at once.
 *
 * The loop's work (accepting, reading, parsing, writing) never holds the GVL: an app thread
 * runs its turns inside rb_nogvl, and gives back its exchanges there too while another thread
 * may want the GVL (hand_back), so another thread runs Ruby meanwhile. And while every awake app thread is in the app, the watchdog's native thread
 * runs the loop (watchdog.c: it "sits"), so a request that computes for seconds stops no
 * other connection's reads, writes or accepts, with any -t; the first app thread to be free
 * again asks for the loop back.
 *
 * The other place for the loop is a native thread of its own (the end of this file), which
 * runs it for good while app threads only run requests: better for calls that wait with the
 * GVL released, worse for calls that compute. placement.c chooses between the two while the
 * worker runs, and up_rb_pool_place_loop moves the loop. One mutex, loop_lock, is the loop:
 * whoever holds it runs it, so it has one owner at any time, during a move too. Moving it to
 * its thread: from then on up_rb_with_loop hands it to no app thread, and the loop's thread
 * waits for loop_lock, waking the loop so that its present owner's turn ends. Moving it back:
 * the loop's thread gives loop_lock up after its turn and wakes a sleeping app thread to take
 * it (or an app thread that found it taken sees loop_releases change and tries again).
 * Requests, responses and connections stay where they are through either move: the queue,
 * the lent exchanges and the mail do not depend on who runs the loop. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "binding.h"

/* ---------------------------------------------------------------- the queue */

static up_rb_job_t job_next(up_rb_job_t job)
{
    return up_rb_job_is_client(job) ? *up_rb_client_job_link(up_rb_job_client(job))
                                    : (up_rb_job_t)up_rb_job_exchange(job)->user;
}

static void job_set_next(up_rb_job_t job, up_rb_job_t next)
{
    if (up_rb_job_is_client(job))
        *up_rb_client_job_link(up_rb_job_client(job)) = next;
    else
        up_rb_job_exchange(job)->user = (void *)next;
}

void up_rb_pool_push(up_rb_server_t *srv, up_rb_job_t job)
{
    job_set_next(job, 0);
    if (srv->batch_tail != 0)
        job_set_next(srv->batch_tail, job);
    else
        srv->batch_head = job;
    srv->batch_tail = job;
}

void up_rb_pool_append_locked(up_rb_server_t *srv, up_rb_job_t job)
{
    job_set_next(job, 0);
    if (srv->queue_tail != 0)
        job_set_next(srv->queue_tail, job);
    else
        srv->queue_head = job;
    srv->queue_tail = job;
    srv->queue_len++;
}

/* At the end of a turn: the work it found joins the queue. Accepting is held while every
 * other thread is stuck in the app and requests still wait for the one running the loop, so
 * that new connections wait in the kernel for a sibling worker (-w N) rather than here. (With
 * one thread, nobody runs the loop while it is in the app: that holds accepting already.) */
void up_rb_pool_publish(up_rb_server_t *srv)
{
    int count = 0;
    for (up_rb_job_t j = srv->batch_head; j != 0; j = job_next(j))
        count++;
    pthread_mutex_lock(&srv->queue_lock);
    if (srv->batch_head != 0) {
        if (srv->queue_tail != 0)
            job_set_next(srv->queue_tail, srv->batch_head);
        else
            srv->queue_head = srv->batch_head;
        srv->queue_tail = srv->batch_tail;
        srv->queue_len += count;
    }
    /* With one thread, the loop runs (on the watchdog) only while that thread is in the app:
     * in a cluster, the connections are better off with a sibling worker then; a single
     * process accepts them, and their requests wait for the thread. */
    int busy = srv->num_threads > 1 ? srv->in_app >= srv->num_threads - 1
                                    : srv->in_app > 0 && srv->config.exclusive_accept;
    int hold = srv->queue_len > 0 && busy;
    /* A native thread runs the loop: with --io-thread, requests wake a sleeping app thread,
     * one per turn, as many as the queue keeps busy; placed there by measurement, only when
     * no app thread is awake, and the watchdog wakes more by its rules, as with turns (see
     * placement.c for why). */
    if (atomic_load(&srv->loop_on_thread) && srv->queue_len > 0 && srv->sleepers > srv->promoted &&
        (srv->loop_policy == UP_RB_LOOP_THREAD || up_rb_awake_threads(srv) == 0)) {
        srv->promoted++;
        pthread_cond_signal(&srv->queue_cond);
    }
    pthread_mutex_unlock(&srv->queue_lock);
    srv->batch_head = srv->batch_tail = 0;
    up_server_hold_accept(srv->server, hold);
}

/* The first queued job, now counted as in the app; 0 when none. */
static up_rb_job_t take_job(up_rb_server_t *srv, up_rb_app_thread_t *self)
{
    pthread_mutex_lock(&srv->queue_lock);
    up_rb_job_t job = srv->queue_head;
    if (job != 0) {
        srv->queue_head = job_next(job);
        if (srv->queue_head == 0)
            srv->queue_tail = 0;
        job_set_next(job, 0);
        srv->queue_len--;
        srv->in_app++;
        self->in_app = 1;
        self->call_started = up_rb_now_ns();
        if (srv->watchdog_asleep)
            pthread_cond_signal(&srv->watchdog_cond);
    }
    pthread_mutex_unlock(&srv->queue_lock);
    return job;
}

/* Whether this thread is to go back to sleep: the watchdog asked for it (the count is taken by
 * this thread then), and another thread will come back for the loop and the queue, because it
 * holds the loop or is in the app. As in app_thread_main, a thread sleeps only while another is
 * sure to come back: one always does. */
static int take_demotion(up_rb_server_t *srv)
{
    int loop_held = pthread_mutex_trylock(&srv->loop_lock) != 0;
    if (!loop_held)
        pthread_mutex_unlock(&srv->loop_lock);
    pthread_mutex_lock(&srv->queue_lock);
    /* The loop's own thread does not come back for the queue: with the loop there, only a
     * thread in the app does. */
    int comes_back = atomic_load(&srv->loop_on_thread) ? srv->in_app > 0 : loop_held || srv->in_app > 0;
    int demoted = srv->demoted > 0 && comes_back;
    if (demoted)
        srv->demoted--;
    int queued = srv->queue_len > 0;
    pthread_mutex_unlock(&srv->queue_lock);
    /* The holder may be blocked in the loop's wait while requests are queued: it is woken
     * for them. */
    if (demoted && queued && loop_held)
        up_loop_wake(srv->loop);
    return demoted;
}

/* ---------------------------------------------------------------- the loop */

typedef struct loop_call_t {
    up_rb_server_t *srv;
    void *(*f)(void *);
    void *arg;
} loop_call_t;

/* The unblocking function of every nogvl loop call: only writes an eventfd, so Ruby may call
 * it from its signal handler. */
static void wake_loop(void *arg)
{
    up_loop_wake(((up_rb_server_t *)arg)->loop);
}

static VALUE loop_call_run(VALUE arg)
{
    loop_call_t *c = (loop_call_t *)arg;
    rb_nogvl(c->f, c->arg, wake_loop, c->srv, RB_NOGVL_UBF_ASYNC_SAFE);
    return Qnil;
}

static VALUE release_loop(VALUE arg)
{
    up_rb_server_t *srv = ((loop_call_t *)arg)->srv;
    up_loop_set_owner(srv->loop, 0);
    pthread_mutex_unlock(&srv->loop_lock);
    return Qnil;
}

/* Whether this app thread may run the loop now: then it owns it until release_loop. */
static int take_loop(up_rb_server_t *srv)
{
    /* The loop belongs to its own thread (or is on its way there): no app thread takes it. */
    if (atomic_load(&srv->loop_on_thread) || pthread_mutex_trylock(&srv->loop_lock) != 0)
        return 0;
    up_loop_set_owner(srv->loop, 1);
    return 1;
}

int up_rb_with_loop(up_rb_server_t *srv, void *(*f)(void *), void *arg)
{
    if (!take_loop(srv))
        return 0;
    loop_call_t c = {srv, f, arg};
    rb_ensure(loop_call_run, (VALUE)&c, release_loop, (VALUE)&c);
    return 1;
}

/* Without the GVL. */
static void *turn_nogvl(void *arg)
{
    up_rb_server_t *srv = arg;
    pthread_mutex_lock(&srv->queue_lock);
    int idle = srv->queue_len == 0;
    pthread_mutex_unlock(&srv->queue_lock);
    up_rb_turn(srv, idle ? -1 : 0);
    return NULL;
}

/* ---------------------------------------------------------------- requests */

typedef struct job_t {
    up_rb_server_t *srv;
    up_rb_app_thread_t *self;
    up_exchange_t *ex;
} job_t;

static VALUE run_job(VALUE arg)
{
    job_t *job = (job_t *)arg;
    up_rb_call_sample_t sample;
    up_rb_placement_begin(job->srv, &sample, job->self->call_started);
    up_rb_handle_request(job->srv, job->ex);
    up_rb_placement_end(job->srv, &sample);
    return Qnil;
}

/* Writes the response and goes on with the connection's next request; without the GVL unless
 * hand_back finds it need not be released. */
static void *give_back(void *arg)
{
    job_t *job = arg;
    up_exchange_return_here(job->ex);
    up_conn_loop_take_mail(job->srv->server);
    up_rb_pool_publish(job->srv);
    return NULL;
}

/* A job is done: its thread is out of the app, and the watchdog sees progress. Returns how
 * many app threads are still in the app. */
static int leave_app(up_rb_server_t *srv, up_rb_app_thread_t *self)
{
    pthread_mutex_lock(&srv->queue_lock);
    int in_app = --srv->in_app;
    self->in_app = 0;
    pthread_mutex_unlock(&srv->queue_lock);
    atomic_fetch_add(&srv->completed, 1);
    return in_app;
}

/* Whatever happened in the app, the loop gets its connection back: from this thread at once
 * when no other runs the loop (the common case: no wake-up), else through the mail.
 *
 * Giving back writes the response and takes the loop's mail: it waits on no lock held for
 * long, and on no socket (they are non-blocking), so the GVL is released for it only when
 * another app thread may want it meanwhile, or when a file range is to be written (sendfile
 * may read from a disk). Else releasing and re-acquiring it would be the most a request costs
 * beyond the app's own work, for nobody: with one thread busy, it goes on with the next
 * request. */
static VALUE hand_back(VALUE arg)
{
    job_t *job = (job_t *)arg;
    up_rb_server_t *srv = job->srv;
    int others_in_app = leave_app(srv, job->self) > 0;
    if (!take_loop(srv)) {
        up_exchange_return(job->ex);
        return Qnil;
    }
    loop_call_t c = {srv, give_back, job};
    if (others_in_app || !up_exchange_output_in_memory(job->ex)) {
        rb_ensure(loop_call_run, (VALUE)&c, release_loop, (VALUE)&c);
    } else {
        give_back(job);
        release_loop((VALUE)&c);
    }
    return Qnil;
}

static void run_request(up_rb_server_t *srv, up_rb_app_thread_t *self, up_exchange_t *ex)
{
    job_t job = {srv, self, ex};
    rb_ensure(run_job, (VALUE)&job, hand_back, (VALUE)&job);
}

typedef struct client_job_t {
    up_rb_server_t *srv;
    up_rb_app_thread_t *self;
    struct up_rb_client_t *client;
} client_job_t;

static VALUE run_client_job(VALUE arg)
{
    client_job_t *job = (client_job_t *)arg;
    up_rb_client_run(job->srv, job->client);
    return Qnil;
}

static VALUE client_job_done(VALUE arg)
{
    client_job_t *job = (client_job_t *)arg;
    leave_app(job->srv, job->self);
    return Qnil;
}

/* A client's callbacks: like a request to the watchdog (in the app, then completed). */
static void run_client(up_rb_server_t *srv, up_rb_app_thread_t *self,
                       struct up_rb_client_t *client)
{
    client_job_t job = {srv, self, client};
    rb_ensure(run_client_job, (VALUE)&job, client_job_done, (VALUE)&job);
}

/* ---------------------------------------------------------------- sleeping and promotion */

typedef struct sleep_t {
    up_rb_server_t *srv;
    int want_loop; /* it found the loop taken and has nothing else to do */
    unsigned long releases; /* srv->loop_releases read before it tried the loop */
    int interrupted;
} sleep_t;

/* Without the GVL: waits for a promotion (the watchdog) or the end, touching only the
 * queue's fields. */
static void *sleep_nogvl(void *arg)
{
    sleep_t *s = arg;
    up_rb_server_t *srv = s->srv;
    pthread_mutex_lock(&srv->queue_lock);
    if (s->want_loop && atomic_load(&srv->loop_releases) != s->releases) {
        /* The loop's thread gave the loop up since this thread found it taken: take it. */
        pthread_mutex_unlock(&srv->queue_lock);
        return NULL;
    }
    if (s->want_loop && srv->sitting) {
        /* The watchdog runs the loop because every thread was in the app: this one is free
         * now and takes the loop back (the watchdog gives it with a promotion). */
        srv->loop_wanted++;
        up_loop_wake(srv->loop);
    }
    srv->sleepers++;
    /* With the loop on its own thread, nobody else takes the queue: a thread with nothing to
     * do does not sleep while work waits (it came after the turn's publish). One the watchdog
     * sent to sleep does, as with turns, until it is woken for that work. */
    while (srv->promoted == 0 && !atomic_load(&srv->finished) && !s->interrupted &&
           !(s->want_loop && atomic_load(&srv->loop_on_thread) && srv->queue_len > 0))
        pthread_cond_wait(&srv->queue_cond, &srv->queue_lock);
    if (srv->promoted > 0)
        srv->promoted--;
    srv->sleepers--;
    pthread_mutex_unlock(&srv->queue_lock);
    return NULL;
}

static void sleep_unblock(void *arg)
{
    sleep_t *s = arg;
    pthread_mutex_lock(&s->srv->queue_lock);
    s->interrupted = 1;
    pthread_cond_broadcast(&s->srv->queue_cond);
    pthread_mutex_unlock(&s->srv->queue_lock);
}

/* Lets the watchdog tell this thread running from waiting for IO or for a lock, where a Ruby
 * thread is a native thread (srv->thread_looks). */
static void open_syscall(up_rb_app_thread_t *self)
{
    if (!self->srv->thread_looks)
        return;
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%ld/syscall", (long)syscall(SYS_gettid));
    self->syscall_fd = open(path, O_RDONLY | O_CLOEXEC);
}

static void go_to_sleep(up_rb_server_t *srv, int want_loop, unsigned long releases)
{
    sleep_t s = {srv, want_loop, releases, 0};
    rb_thread_call_without_gvl(sleep_nogvl, &s, sleep_unblock, &s);
}

static VALUE app_thread_main(void *arg)
{
    up_rb_app_thread_t *self = arg;
    up_rb_server_t *srv = self->srv;
    open_syscall(self);
    while (!atomic_load(&srv->finished)) {
        if (atomic_load(&srv->demoted) > 0 && take_demotion(srv)) {
            go_to_sleep(srv, 0, 0);
            rb_thread_check_ints();
            continue;
        }
        up_rb_job_t job = take_job(srv, self);
        if (job != 0) {
            if (up_rb_job_is_client(job))
                run_client(srv, self, up_rb_job_client(job));
            else
                run_request(srv, self, up_rb_job_exchange(job));
            continue;
        }
        unsigned long releases = atomic_load(&srv->loop_releases);
        if (!up_rb_with_loop(srv, turn_nogvl, srv)) {
            /* Another thread has the loop, and there is no request: nothing to do here until
             * the running threads get stuck (or the loop's native thread finds requests). */
            go_to_sleep(srv, 1, releases);
        }
        rb_thread_check_ints();
    }
    return Qnil;
}

/* ---------------------------------------------------------------- draining */

typedef struct drain_t {
    up_exchange_t *ex;
    atomic_int cancelled; /* set by the unblocking function, read by the waiter */
} drain_t;

static void *drain_nogvl(void *arg)
{
    drain_t *d = arg;
    return (void *)(intptr_t)up_exchange_wait_backlog(d->ex, UP_CONN_BACKLOG_LIMIT / 2,
                                                       &d->cancelled);
}

static void drain_unblock(void *arg)
{
    drain_t *d = arg;
    atomic_store(&d->cancelled, 1);
    up_exchange_cancel_waits(d->ex);
}

static void *drain_turn_nogvl(void *arg)
{
    up_rb_turn(arg, -1);
    return NULL;
}

int up_rb_pool_wait_drain(up_rb_server_t *srv, up_exchange_t *ex)
{
    up_conn_t *conn = ex->conn;
    while (up_exchange_backlog(ex) > UP_CONN_BACKLOG_LIMIT / 2 && !up_conn_any_broken(conn)) {
        /* The socket is written by whoever runs the loop: when nobody does, this thread
         * does, and its turns only queue what they find (no app call nests here). */
        if (!up_rb_with_loop(srv, drain_turn_nogvl, srv)) {
            drain_t d = {ex, 0};
            rb_thread_call_without_gvl(drain_nogvl, &d, drain_unblock, &d);
        }
        rb_thread_check_ints();
        if (atomic_load(&srv->finished))
            break;
    }
    return up_conn_any_broken(conn) ? -1 : 0;
}

/* ---------------------------------------------------------------- running */

void up_rb_wake_main_thread(up_rb_server_t *srv)
{
    uint64_t one = 1;
    /* An eventfd write: safe from a signal handler too (see supervise). */
    if (write(srv->main_wake_fd, &one, sizeof(one)) < 0)
        return; /* EAGAIN: a wake-up is pending already */
}

void up_rb_pool_wake_main(up_rb_server_t *srv)
{
    up_rb_wake_main_thread(srv);
    pthread_mutex_lock(&srv->queue_lock);
    pthread_cond_broadcast(&srv->queue_cond);
    pthread_mutex_unlock(&srv->queue_lock);
}

static void *main_wait_nogvl(void *arg)
{
    up_rb_server_t *srv = arg;
    /* Without the GVL: the wake fd only. Stopping, it looks at the deadline ten times a
     * second. */
    struct pollfd pfd = {.fd = srv->main_wake_fd, .events = POLLIN};
    if (!srv->finished && poll(&pfd, 1, srv->stop_requested ? 100 : -1) > 0) {
        uint64_t count;
        if (read(srv->main_wake_fd, &count, sizeof(count)) < 0)
            return NULL; /* EAGAIN: another reader took it */
    }
    return NULL;
}

static void main_wait_unblock(void *arg)
{
    up_rb_wake_main_thread(arg);
}

/* ---------------------------------------------------------------- the native loop thread */

/* Waits for loop_lock while the loop is to be on this thread, waking the loop now and then so
 * that its present owner's turn (an app thread, or the watchdog sitting) ends. Returns whether
 * it got it. Without queue_lock. */
static int io_thread_take_loop(up_rb_server_t *srv)
{
    while (atomic_load(&srv->loop_on_thread) && !atomic_load(&srv->finished)) {
        up_loop_wake(srv->loop);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 5000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (pthread_mutex_timedlock(&srv->loop_lock, &ts) == 0)
            return 1;
    }
    return 0;
}

/* The loop's own thread: while the loop is placed here, it holds loop_lock and runs turns,
 * never the GVL; else it waits to be asked. Giving the loop up (or giving up waiting for it),
 * it wakes a sleeping app thread, which takes the loop then. */
static void *io_thread_main(void *arg)
{
    up_rb_server_t *srv = arg;
    pthread_mutex_lock(&srv->queue_lock);
    for (;;) {
        while (!atomic_load(&srv->loop_on_thread) && !atomic_load(&srv->finished))
            pthread_cond_wait(&srv->io_thread_cond, &srv->queue_lock);
        if (atomic_load(&srv->finished))
            break;
        pthread_mutex_unlock(&srv->queue_lock);
        int held = io_thread_take_loop(srv);
        if (held) {
            up_loop_set_owner(srv->loop, 1);
            while (atomic_load(&srv->loop_on_thread) && !up_rb_turn(srv, -1))
                ;
            up_loop_set_owner(srv->loop, 0);
        }
        /* queue_lock before the loop is let go: an app thread that found it taken either
         * sleeps before this and is woken here, or sees loop_releases change after. */
        pthread_mutex_lock(&srv->queue_lock);
        if (held)
            pthread_mutex_unlock(&srv->loop_lock);
        atomic_fetch_add(&srv->loop_releases, 1);
        if (srv->sleepers > srv->promoted) {
            srv->promoted++;
            pthread_cond_signal(&srv->queue_cond);
        }
    }
    pthread_mutex_unlock(&srv->queue_lock);
    return NULL;
}

/* Started with the server unless --no-io-thread: waiting, or running the loop at once with
 * --io-thread. */
static void start_io_thread(up_rb_server_t *srv)
{
    if (srv->loop_policy == UP_RB_LOOP_TURNS)
        return;
    atomic_store(&srv->loop_on_thread, srv->loop_policy == UP_RB_LOOP_THREAD);
    if (pthread_create(&srv->io_thread, NULL, io_thread_main, srv) != 0) {
        atomic_store(&srv->loop_on_thread, 0);
        rb_sys_fail("starting the loop's thread");
    }
    srv->io_thread_started = 1;
}

/* finished is set: the thread's next turn, or its wait, ends it. */
static void stop_io_thread(up_rb_server_t *srv)
{
    if (!srv->io_thread_started)
        return; /* none, or it failed to start (start_io_thread runs first, always) */
    pthread_mutex_lock(&srv->queue_lock);
    pthread_cond_broadcast(&srv->io_thread_cond);
    pthread_mutex_unlock(&srv->queue_lock);
    up_loop_wake(srv->loop);
    pthread_join(srv->io_thread, NULL);
    srv->io_thread_started = 0;
}

void up_rb_pool_place_loop(up_rb_server_t *srv, int on_thread)
{
    if (srv->loop_policy != UP_RB_LOOP_AUTO || !srv->io_thread_started)
        return;
    pthread_mutex_lock(&srv->queue_lock);
    atomic_store(&srv->loop_on_thread, on_thread);
    pthread_cond_broadcast(&srv->io_thread_cond);
    pthread_mutex_unlock(&srv->queue_lock);
    /* The owner's turn ends: the app thread or watchdog running it lets go (moving to the
     * thread), or the loop's thread does (moving back). */
    up_loop_wake(srv->loop);
}

/* A grace past the deadline for the threads to notice it themselves before they are made to. */
#define DEADLINE_GRACE_NS (200 * 1000000ull)

static VALUE supervise(VALUE arg)
{
    up_rb_server_t *srv = (up_rb_server_t *)arg;
    while (!srv->finished) {
        /* Ruby runs signal traps on the main thread, which waits here: its unblock function
         * only writes an eventfd, so Ruby may call it from its signal handler (the flag),
         * and no signal waits for something else to wake this thread. */
        rb_nogvl(main_wait_nogvl, srv, main_wait_unblock, srv, RB_NOGVL_UBF_ASYNC_SAFE);
        rb_thread_check_ints(); /* signal traps run here, on the main thread */
        up_rb_log_flush(srv);
        if (srv->stop_requested && up_rb_now_ns() >= srv->deadline_ns + DEADLINE_GRACE_NS) {
            /* Every thread is stuck in the app, so no turn ends the stop: end it here. */
            srv->finished = 1;
            up_rb_pool_wake_main(srv);
        }
    }
    return Qnil;
}

/* Waits for the threads until the stop's deadline; those still in the app then are killed
 * (their connections come back through the mail, see hand_back). */
static VALUE join_threads(VALUE arg)
{
    up_rb_server_t *srv = (up_rb_server_t *)arg;
    if (srv->deadline_ns == 0) /* run ended by an exception, not a stop */
        srv->deadline_ns = up_rb_now_ns();
    srv->finished = 1;
    up_rb_pool_wake_main(srv);
    up_rb_watchdog_stop(srv);
    stop_io_thread(srv);
    for (long i = 0; i < RARRAY_LEN(srv->threads); i++) {
        VALUE thread = RARRAY_AREF(srv->threads, i);
        uint64_t now = up_rb_now_ns(), deadline = srv->deadline_ns;
        double left = deadline > now ? (double)(deadline - now) / 1e9 : 0.0;
        if (NIL_P(rb_funcall(thread, rb_intern("join"), 1, DBL2NUM(left)))) {
            rb_funcall(thread, rb_intern("kill"), 0);
            rb_funcall(thread, rb_intern("join"), 0);
        }
    }
    srv->threads = Qnil;
    for (int i = 0; i < srv->num_threads; i++) {
        if (srv->app_threads[i].syscall_fd >= 0)
            close(srv->app_threads[i].syscall_fd);
    }
    free(srv->app_threads);
    srv->app_threads = NULL;
    /* Callbacks no thread ran, then those of connections closed by the finish: every client's
     * on_close runs, here if not on an app thread. */
    up_rb_clients_drain(srv);
    up_rb_finish(srv);
    up_rb_clients_drain(srv);
    return Qnil;
}

static VALUE start_and_supervise(VALUE arg)
{
    up_rb_server_t *srv = (up_rb_server_t *)arg;
    start_io_thread(srv);
    for (int i = 0; i < srv->num_threads; i++)
        rb_ary_push(srv->threads, rb_thread_create(app_thread_main, &srv->app_threads[i]));
    up_rb_watchdog_start(srv);
    return supervise(arg);
}

void up_rb_pool_run(up_rb_server_t *srv)
{
    srv->app_threads = calloc((size_t)srv->num_threads, sizeof(*srv->app_threads));
    if (srv->app_threads == NULL)
        rb_memerror();
    for (int i = 0; i < srv->num_threads; i++)
        srv->app_threads[i] = (up_rb_app_thread_t){srv, -1, 0, 0};
    srv->threads = rb_ary_new_capa(srv->num_threads);
    /* Whatever fails while starting, the threads already started are joined. */
    rb_ensure(start_and_supervise, (VALUE)srv, join_threads, (VALUE)srv);
}
