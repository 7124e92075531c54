/* One turn of the loop: the stop's progress, then the events (accepting, reading, parsing,
 * writing, timeouts). Requests found are queued for the app threads, never run inside the
 * dispatch, so a turn never nests an app call.
 *
 * A turn runs without the GVL (docs/architecture.md, "Rules": the GVL is held only to build the env, call the app
 * and walk the body), whoever runs it: an app thread between its app calls, inside rb_nogvl,
 * or the watchdog's native thread while every app thread is stuck in the app (watchdog.c).
 * So nothing a turn calls may touch a Ruby object: the engine's log lines are queued here and
 * written by the main thread (up_rb_log_flush), and requests go to a C queue. */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "binding.h"

uint64_t up_rb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---------------------------------------------------------------- the engine's log lines */

static ID id_log;

/* Any thread, no GVL needed: the line waits in a bounded queue and the main thread, woken
 * for it, writes it through Up::Server#log. Lines past the queue's room are counted and the
 * count logged instead: a flood of accept errors must not grow memory. */
void up_rb_on_log(const char *message, void *user)
{
    up_rb_server_t *srv = user;
    up_rb_log_queue_t *q = &srv->log_queue;
    pthread_mutex_lock(&q->lock);
    if (q->count < UP_RB_LOG_LINES)
        snprintf(q->lines[q->count++], sizeof(q->lines[0]), "%s", message);
    else
        q->dropped++;
    pthread_mutex_unlock(&q->lock);
    up_rb_wake_main_thread(srv); /* the main thread alone: the app threads have no part in it */
}

static VALUE log_line(VALUE arg)
{
    VALUE *args = (VALUE *)arg;
    return rb_funcall(args[0], id_log, 1, args[1]);
}

/* A broken logger must not take the main thread down. */
static void log_protected(up_rb_server_t *srv, VALUE line)
{
    VALUE args[2] = {srv->self, line};
    int state = 0;
    rb_protect(log_line, (VALUE)args, &state);
    if (state != 0)
        rb_set_errinfo(Qnil);
}

void up_rb_log_flush(up_rb_server_t *srv)
{
    up_rb_log_queue_t *q = &srv->log_queue;
    char lines[UP_RB_LOG_LINES][sizeof(q->lines[0])];
    pthread_mutex_lock(&q->lock);
    int count = q->count;
    unsigned long dropped = q->dropped;
    memcpy(lines, q->lines, (size_t)count * sizeof(q->lines[0]));
    q->count = 0;
    q->dropped = 0;
    pthread_mutex_unlock(&q->lock);
    for (int i = 0; i < count; i++)
        log_protected(srv, rb_str_new_cstr(lines[i]));
    if (dropped > 0)
        log_protected(srv, rb_sprintf("%lu more engine log lines dropped", dropped));
}

/* ---------------------------------------------------------------- turns */

/* Begins the stop when asked, and tells when it is over: every connection closed, or the
 * deadline passed (then whatever is still open closes now; a lent exchange when returned). */
static int stop_progress(up_rb_server_t *srv)
{
    if (!atomic_load(&srv->stop_requested))
        return 0;
    if (!srv->stopping) {
        srv->stopping = 1;
        up_server_stop(srv->server);
    }
    if (up_server_num_conns(srv->server) == 0)
        return 1;
    if (up_rb_now_ns() >= atomic_load(&srv->deadline_ns)) {
        up_server_close_all(srv->server);
        return 1;
    }
    return 0;
}

int up_rb_turn(up_rb_server_t *srv, int timeout_ms)
{
    if (atomic_load(&srv->finished))
        return 1;
    if (stop_progress(srv)) {
        atomic_store(&srv->finished, 1);
        up_rb_pool_wake_main(srv);
        return 1;
    }
    /* A stopping server looks at its deadline at least ten times a second. */
    if (srv->stopping && (timeout_ms < 0 || timeout_ms > 100))
        timeout_ms = 100;
    if (up_loop_wait(srv->loop, timeout_ms) < 0 && errno != EINTR &&
        !atomic_load(&srv->stop_requested)) {
        /* The loop is broken and every wait would fail at once: say so and stop, not spin. */
        char msg[96];
        snprintf(msg, sizeof(msg), "event loop failed: %s; stopping", strerror(errno));
        up_rb_on_log(msg, srv);
        up_rb_request_stop(srv, 0);
    }
    up_loop_dispatch(srv->loop);
    up_rb_pool_publish(srv);
    up_access_log_flush(&srv->access_log, 0);
    return 0;
}

void up_rb_finish(up_rb_server_t *srv)
{
    /* Exchanges the threads gave back on their way out, and whatever is still open, close
     * now; the loop lets go of them in one last turn. */
    up_conn_loop_take_mail(srv->server);
    up_server_close_all(srv->server);
    up_loop_dispatch(srv->loop);
    up_access_log_flush(&srv->access_log, 1);
    up_rb_log_flush(srv);
}

void up_rb_init_turn(void)
{
    id_log = rb_intern("log");
}
