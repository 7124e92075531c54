/* The app threads of -t N: the loop thread queues each complete request here and goes on
 * serving other connections; an app thread takes it, runs the app (which may sleep or wait on
 * IO without holding anyone up), writes the response and hands the connection back to the
 * loop with up_conn_resume. */

#include "binding.h"

typedef struct pop_t {
    up_rb_server_t *srv;
    up_conn_t *conn;
    int interrupted;
} pop_t;

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

/* Without the GVL: touches only the queue, no Ruby object. */
static void *pop_nogvl(void *arg)
{
    pop_t *p = arg;
    up_rb_server_t *srv = p->srv;
    pthread_mutex_lock(&srv->queue_lock);
    srv->queue_sleepers++;
    while (srv->queue_head == NULL && !srv->queue_closed && !p->interrupted)
        pthread_cond_wait(&srv->queue_cond, &srv->queue_lock);
    srv->queue_sleepers--;
    p->conn = shift_locked(srv);
    if (srv->queue_head != NULL && srv->queue_sleepers > 0)
        pthread_cond_signal(&srv->queue_cond);
    pthread_mutex_unlock(&srv->queue_lock);
    return NULL;
}

/* With the GVL: a request already waiting is taken without giving the GVL up and fighting
 * for it again, which under load is most of the cost of a hand-off. */
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

static void pop_unblock(void *arg)
{
    pop_t *p = arg;
    pthread_mutex_lock(&p->srv->queue_lock);
    p->interrupted = 1;
    pthread_cond_broadcast(&p->srv->queue_cond);
    pthread_mutex_unlock(&p->srv->queue_lock);
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
        pop_t p = {srv, try_pop(srv), 0};
        if (p.conn == NULL)
            rb_thread_call_without_gvl(pop_nogvl, &p, pop_unblock, &p);
        if (p.conn == NULL) {
            if (srv->queue_closed)
                break;
            rb_thread_check_ints();
            continue;
        }
        job_t job = {srv, p.conn};
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
