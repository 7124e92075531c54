/* The app threads of -t N: the loop thread queues each complete request here and goes on
 * serving other connections; an app thread takes it, runs the app (which may sleep or wait on
 * IO without holding anyone up), writes the response and hands the connection back to the
 * loop with up_conn_resume. */

#include "binding.h"

typedef struct waiter_t {
    up_rb_server_t *srv;
    int interrupted;
} waiter_t;

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
    pthread_mutex_lock(&srv->queue_lock);
    if (srv->queue_tail != NULL)
        srv->queue_tail->user = srv->batch_head;
    else
        srv->queue_head = srv->batch_head;
    srv->queue_tail = srv->batch_tail;
    /* One thread is woken; it wakes the next if it leaves work behind (see pop_nogvl), so a
     * burst wakes as many threads as it needs, one futex call each, and a thread that is
     * still running takes the next request without any. */
    if (srv->queue_sleepers > 0)
        pthread_cond_signal(&srv->queue_cond);
    pthread_mutex_unlock(&srv->queue_lock);
    srv->batch_head = srv->batch_tail = NULL;
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
    }
    return conn;
}

/* Without the GVL: waits until there is work, touching only the queue. The request is taken
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
    /* What is left must not wait behind this request if it turns out to block. */
    if (srv->queue_head != NULL && srv->queue_sleepers > 0)
        pthread_cond_signal(&srv->queue_cond);
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
    up_conn_resume(((job_t *)arg)->conn);
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

/* Lets the threads finish what is queued, then waits for them, at most timeout seconds in
 * all; threads still busy after that are killed. */
void up_rb_pool_stop(up_rb_server_t *srv, double timeout)
{
    if (NIL_P(srv->threads))
        return;
    pthread_mutex_lock(&srv->queue_lock);
    srv->queue_closed = 1;
    pthread_cond_broadcast(&srv->queue_cond);
    pthread_mutex_unlock(&srv->queue_lock);
    VALUE limit = DBL2NUM(timeout);
    for (long i = 0; i < RARRAY_LEN(srv->threads); i++) {
        VALUE thread = RARRAY_AREF(srv->threads, i);
        if (NIL_P(rb_funcall(thread, rb_intern("join"), 1, limit))) {
            rb_funcall(thread, rb_intern("kill"), 0);
            rb_funcall(thread, rb_intern("join"), 0);
        }
    }
    srv->threads = Qnil;
}
