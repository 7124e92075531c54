/* One turn of the loop, as the app threads run it (thread_pool.c: whichever holds loop_lock,
 * between its app calls): the stop's progress, then the events. Requests found are queued,
 * never run inside the dispatch, so a turn never nests an app call.
 *
 * The GVL is held throughout but for the blocking wait: under load events are already waiting
 * and are collected without giving it up, since each release and re-acquire costs Ruby
 * several syscalls; only a turn with nothing to do blocks, and it does so without the GVL. */

#include <time.h>
#include "binding.h"

uint64_t up_rb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static ID id_log;

static VALUE log_line(VALUE arg)
{
    up_rb_server_t *srv = ((up_rb_server_t **)arg)[0];
    const char *message = ((const char **)arg)[1];
    return rb_funcall(srv->self, id_log, 1, rb_str_new_cstr(message));
}

/* The engine logs from a turn, which holds the GVL. A broken logger must not take the turn
 * down. */
void up_rb_on_log(const char *message, void *user)
{
    const void *args[2] = {user, message};
    int state = 0;
    rb_protect(log_line, (VALUE)args, &state);
    if (state != 0)
        rb_set_errinfo(Qnil);
}

/* Begins the stop when asked, and tells when it is over: every connection closed, or the
 * deadline passed (then whatever is still open closes now; a lent exchange when given back). */
static int stop_progress(up_rb_server_t *srv)
{
    if (!srv->stop_requested)
        return 0;
    if (!srv->stopping) {
        srv->stopping = 1;
        up_server_stop(srv->server);
    }
    if (up_server_num_conns(srv->server) == 0)
        return 1;
    if (up_rb_now_ns() >= srv->deadline_ns) {
        up_server_close_all(srv->server);
        return 1;
    }
    return 0;
}

typedef struct wait_t {
    up_rb_server_t *srv;
    int timeout_ms;
} wait_t;

static void *wait_nogvl(void *arg)
{
    wait_t *w = arg;
    /* Without the GVL: epoll_wait only; no Ruby object is touched. */
    up_loop_wait(w->srv->loop, w->timeout_ms);
    return NULL;
}

static void wake_loop(void *arg)
{
    up_loop_wake(((up_rb_server_t *)arg)->loop);
}

int up_rb_turn(up_rb_server_t *srv, int may_block)
{
    if (srv->finished)
        return 1;
    if (stop_progress(srv)) {
        srv->finished = 1;
        up_rb_pool_wake_main(srv);
        return 1;
    }
    if (up_loop_wait(srv->loop, 0) == 0 && may_block) {
        /* A stopping server looks at its deadline at least ten times a second. */
        wait_t w = {srv, srv->stopping ? 100 : -1};
        /* wake_loop only writes an eventfd: Ruby may call it from its signal handler. */
        rb_nogvl(wait_nogvl, &w, wake_loop, srv, RB_NOGVL_UBF_ASYNC_SAFE);
    }
    up_loop_dispatch(srv->loop);
    up_rb_pool_publish(srv);
    up_rb_access_log_flush(srv, 0);
    return 0;
}

void up_rb_finish(up_rb_server_t *srv)
{
    /* Exchanges the threads gave back on their way out, and whatever is still open, close
     * now; the loop lets go of them in one last turn. */
    up_conn_take_posted(srv->server);
    up_server_close_all(srv->server);
    up_loop_dispatch(srv->loop);
    up_rb_access_log_flush(srv, 1);
}

void up_rb_init_turn(void)
{
    id_log = rb_intern("log");
}
