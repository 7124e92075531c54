/* The app threads of -t N: the loop thread queues each complete request here and goes on
 * serving other connections; an app thread takes it, runs the app (which may sleep or wait on
 * IO without holding anyone up), writes the response and gives the connection back to the
 * loop with up_conn_resume.
 *
 * Only as many threads run as the work needs. Threads share one GVL, so a second thread woken
 * for a request the running one would have taken a few microseconds later only waits for the
 * GVL and costs a third of the throughput of a hello world. So a burst wakes one thread, a
 * thread that finishes a request takes the next without sleeping, and the loop thread (the
 * watchdog, up_rb_pool_watch) wakes another only when requests wait while no app thread has
 * finished one for WATCHDOG_NS: the running ones are blocked (sleep, IO, a lock) or busy for
 * long. An app that never blocks runs on one thread as fast as inline; one that blocks gets
 * the others within about a millisecond. */

#include <time.h>
#include "binding.h"

/* How long queued work may wait while no app thread finishes anything before another is
 * woken. Well above one fast request (tens of microseconds), well below what a client
 * notices. */
#define WATCHDOG_NS 1000000ull

typedef struct waiter_t {
    up_rb_server_t *srv;
    int interrupted;
} waiter_t;

uint64_t up_rb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void up_rb_pool_push(up_rb_server_t *srv, up_conn_t *conn)
{
    conn->user = NULL;
    if (srv->batch_tail != NULL)
        srv->batch_tail->user = conn;
    else
        srv->batch_head = conn;
    srv->batch_tail = conn;
}

void up_rb_pool_publish(up_rb_server_t *srv)
{
    if (srv->batch_head == NULL)
        return;
    int count = 0;
    for (up_conn_t *c = srv->batch_head; c != NULL; c = c->user)
        count++;
    pthread_mutex_lock(&srv->queue_lock);
    if (srv->queue_tail != NULL)
        srv->queue_tail->user = srv->batch_head;
    else
        srv->queue_head = srv->batch_head;
    srv->queue_tail = srv->batch_tail;
    srv->queue_len += count;
    /* Wake a thread only when none is awake to take the work; the watchdog adds more. */
    if (srv->queue_sleepers == srv->num_threads)
        pthread_cond_signal(&srv->queue_cond);
    pthread_mutex_unlock(&srv->queue_lock);
    srv->batch_head = srv->batch_tail = NULL;
}

int up_rb_pool_watch(up_rb_server_t *srv)
{
    pthread_mutex_lock(&srv->queue_lock);
    int waiting = srv->queue_len, sleepers = srv->queue_sleepers;
    /* A thread is free when it sleeps or is between two requests; when the queued requests
     * already outnumber the free threads, a new connection would only wait here while a
     * sibling worker could serve it. */
    int free_threads = srv->num_threads - srv->busy;
    pthread_mutex_unlock(&srv->queue_lock);
    up_server_hold_accept(srv->server, waiting >= free_threads);
    if (waiting == 0 || sleepers == 0) {
        srv->watch_since_ns = 0;
        return -1;
    }
    unsigned long completed = atomic_load(&srv->completed);
    uint64_t now = up_rb_now_ns();
    if (srv->watch_since_ns == 0 || completed != srv->watch_completed) {
        srv->watch_completed = completed;
        srv->watch_since_ns = now;
        return 1;
    }
    if (now - srv->watch_since_ns < WATCHDOG_NS)
        return 1;
    pthread_mutex_lock(&srv->queue_lock);
    pthread_cond_signal(&srv->queue_cond);
    pthread_mutex_unlock(&srv->queue_lock);
    srv->watch_since_ns = now; /* one more thread per period at most */
    return 1;
}

/* Takes the first queued request, if any; queue_lock held. */
static up_conn_t *shift_locked(up_rb_server_t *srv)
{
    up_conn_t *conn = srv->queue_head;
    if (conn != NULL) {
        srv->queue_head = conn->user;
        if (srv->queue_head == NULL)
            srv->queue_tail = NULL;
        conn->user = NULL;
        srv->queue_len--;
        srv->busy++;
    }
    return conn;
}

/* Without the GVL: waits until there is work and this thread is woken for it, touching only
 * the queue. The request is taken
 * afterwards, with the GVL held: a thread that took one here could then wait for the GVL for
 * a whole time slice while the request sat with it, untouched. */
static void *wait_nogvl(void *arg)
{
    waiter_t *w = arg;
    up_rb_server_t *srv = w->srv;
    pthread_mutex_lock(&srv->queue_lock);
    srv->queue_sleepers++;
    while (srv->queue_head == NULL && !srv->queue_closed && !w->interrupted)
        pthread_cond_wait(&srv->queue_cond, &srv->queue_lock);
    srv->queue_sleepers--;
    pthread_mutex_unlock(&srv->queue_lock);
    return NULL;
}

/* With the GVL: a thread that finishes a request takes the next one without giving the GVL
 * up and fighting for it again, which under load is most of the cost of a hand-off. */
static up_conn_t *try_pop(up_rb_server_t *srv)
{
    pthread_mutex_lock(&srv->queue_lock);
    up_conn_t *conn = shift_locked(srv);
    pthread_mutex_unlock(&srv->queue_lock);
    return conn;
}

static void wait_unblock(void *arg)
{
    waiter_t *w = arg;
    pthread_mutex_lock(&w->srv->queue_lock);
    w->interrupted = 1;
    pthread_cond_broadcast(&w->srv->queue_cond);
    pthread_mutex_unlock(&w->srv->queue_lock);
}

typedef struct job_t {
    up_rb_server_t *srv;
    up_conn_t *conn;
} job_t;

static VALUE run_job(VALUE arg)
{
    job_t *job = (job_t *)arg;
    up_rb_handle_request(job->srv, job->conn);
    return Qnil;
}

/* Whatever happened in the app, the loop gets its connection back. */
static VALUE hand_back(VALUE arg)
{
    job_t *job = (job_t *)arg;
    up_rb_server_t *srv = job->srv;
    pthread_mutex_lock(&srv->queue_lock);
    srv->busy--;
    pthread_mutex_unlock(&srv->queue_lock);
    atomic_fetch_add(&srv->completed, 1);
    up_conn_resume(job->conn);
    return Qnil;
}

static VALUE app_thread_main(void *arg)
{
    up_rb_server_t *srv = arg;
    for (;;) {
        up_conn_t *conn = try_pop(srv);
        if (conn == NULL) {
            if (srv->queue_closed)
                break;
            waiter_t w = {srv, 0};
            rb_thread_call_without_gvl(wait_nogvl, &w, wait_unblock, &w);
            rb_thread_check_ints();
            continue;
        }
        job_t job = {srv, conn};
        rb_ensure(run_job, (VALUE)&job, hand_back, (VALUE)&job);
    }
    return Qnil;
}

void up_rb_pool_start(up_rb_server_t *srv)
{
    srv->queue_closed = 0;
    srv->threads = rb_ary_new_capa(srv->num_threads);
    for (int i = 0; i < srv->num_threads; i++)
        rb_ary_push(srv->threads, rb_thread_create(app_thread_main, srv));
}

void up_rb_pool_stop(up_rb_server_t *srv, uint64_t deadline_ns)
{
    if (NIL_P(srv->threads))
        return;
    pthread_mutex_lock(&srv->queue_lock);
    srv->queue_closed = 1;
    pthread_cond_broadcast(&srv->queue_cond);
    pthread_mutex_unlock(&srv->queue_lock);
    for (long i = 0; i < RARRAY_LEN(srv->threads); i++) {
        VALUE thread = RARRAY_AREF(srv->threads, i);
        uint64_t now = up_rb_now_ns();
        double left = now < deadline_ns ? (double)(deadline_ns - now) / 1e9 : 0.0;
        if (NIL_P(rb_funcall(thread, rb_intern("join"), 1, DBL2NUM(left)))) {
            rb_funcall(thread, rb_intern("kill"), 0);
            rb_funcall(thread, rb_intern("join"), 0);
        }
    }
    srv->threads = Qnil;
}
