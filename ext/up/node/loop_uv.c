/* The libuv backend of loop.h, used by the Node addon on Node's own loop (and by the engine's
 * C tests on a loop of its own). Each watched fd is a uv_poll handle, made at its first watch
 * and closed with the watcher; the engine's tick is a uv_timer and its wake-up a uv_async.
 *
 * uv_poll is level-triggered, as the epoll backend is, so a connection that stops reading
 * mid-buffer loses no readiness. The UP_EV_EXCLUSIVE hint is not honoured (uv_poll has no
 * exclusive wake-up): every process watching a shared listening socket wakes and they race
 * for accept, which loop.h allows. */

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "loop_uv.h"
#include "base/memory.h"

/* The loop's own handles (tick, wake, closer, wait), closed by up_loop_free. */
#define NUM_HANDLES 4

struct up_loop_t {
    uv_loop_t *uv;
    uv_loop_t own;       /* the uv loop up_loop_new makes; unused on someone else's */
    int owns_uv;
    pthread_t thread;    /* the thread that created the loop and runs it (loop_uv.h) */
    uv_timer_t tick;
    uv_async_t wake;
    uv_idle_t closer;    /* runs the close callbacks of watchers that had no uv handle */
    uv_timer_t wait;     /* bounds up_loop_uv_run_once's wait */
    up_loop_cb tick_cb;
    void *tick_data;
    up_loop_cb wake_cb;
    void *wake_data;
    up_watcher_t *closing; /* closed watchers without a uv handle, on_closed not run yet */
    int open_handles;      /* of the NUM_HANDLES, not closed yet */
};

static void tick_on_timer(uv_timer_t *t)
{
    up_loop_t *loop = t->data;
    if (loop->tick_cb != NULL)
        loop->tick_cb(loop->tick_data);
}

static void wake_on_async(uv_async_t *a)
{
    up_loop_t *loop = a->data;
    if (loop->wake_cb != NULL)
        loop->wake_cb(loop->wake_data);
}

static void run_closing(up_loop_t *loop)
{
    while (loop->closing != NULL) {
        up_watcher_t *w = loop->closing;
        loop->closing = w->_next_closing;
        w->_next_closing = NULL;
        w->_on_closed(w, 0);
    }
}

static void closer_on_idle(uv_idle_t *idle)
{
    up_loop_t *loop = idle->data;
    uv_idle_stop(idle);
    run_closing(loop);
}

static void wait_on_timer(uv_timer_t *t)
{
    (void)t; /* only ends the wait */
}

/* Returns 0, or -1 when a handle cannot be made (then loop holds nothing to close). */
static int init_handles(up_loop_t *loop)
{
    loop->thread = pthread_self();
    uv_handle_t *handles[NUM_HANDLES] = {(uv_handle_t *)&loop->tick, (uv_handle_t *)&loop->wake,
                                         (uv_handle_t *)&loop->closer, (uv_handle_t *)&loop->wait};
    /* Each init only fails for bad arguments or a broken loop (uv_async_init's eventfd). */
    if (uv_async_init(loop->uv, &loop->wake, wake_on_async) != 0)
        return -1;
    uv_timer_init(loop->uv, &loop->tick);
    uv_idle_init(loop->uv, &loop->closer);
    uv_timer_init(loop->uv, &loop->wait);
    for (int i = 0; i < NUM_HANDLES; i++) {
        handles[i]->data = loop;
        /* On Node's loop, what keeps the process alive is its sockets, not our housekeeping. */
        if (!loop->owns_uv)
            uv_unref(handles[i]);
    }
    loop->open_handles = NUM_HANDLES;
    return 0;
}

up_loop_t *up_loop_new(void)
{
    up_loop_t *loop = up_calloc(1, sizeof(*loop));
    if (uv_loop_init(&loop->own) != 0) {
        free(loop);
        return NULL;
    }
    loop->uv = &loop->own;
    loop->owns_uv = 1;
    if (init_handles(loop) != 0) {
        uv_loop_close(&loop->own);
        free(loop);
        return NULL;
    }
    return loop;
}

up_loop_t *up_loop_uv_new(uv_loop_t *uv)
{
    up_loop_t *loop = up_calloc(1, sizeof(*loop));
    loop->uv = uv;
    if (init_handles(loop) != 0) {
        free(loop);
        return NULL;
    }
    return loop;
}

/* The last of the loop's handles closed: a loop on someone else's uv loop goes now (one that
 * owns its uv loop is freed by up_loop_free itself, after the uv loop). */
static void handle_on_closed(uv_handle_t *h)
{
    up_loop_t *loop = h->data;
    if (--loop->open_handles == 0 && !loop->owns_uv)
        free(loop);
}

void up_loop_free(up_loop_t *loop)
{
    run_closing(loop);
    uv_close((uv_handle_t *)&loop->tick, handle_on_closed);
    uv_close((uv_handle_t *)&loop->wake, handle_on_closed);
    uv_close((uv_handle_t *)&loop->closer, handle_on_closed);
    uv_close((uv_handle_t *)&loop->wait, handle_on_closed);
    if (!loop->owns_uv)
        return;
    /* One iteration runs every close callback due: ours and the watchers' closed before. */
    uv_run(&loop->own, UV_RUN_NOWAIT);
    if (uv_loop_close(&loop->own) != 0)
        up_fatal("up_loop_free: a watcher of the loop was never closed");
    free(loop);
}

static void poll_on_dropped(uv_handle_t *h)
{
    free(h);
}

static void poll_on_event(uv_poll_t *p, int status, int events)
{
    up_watcher_t *w = p->data;
    unsigned revents;
    if (status < 0) {
        /* A socket error: libuv has stopped the handle; drop it as an unwatch does. */
        uv_close((uv_handle_t *)p, poll_on_dropped);
        w->_backend = NULL;
        w->events = 0;
        revents = UP_EV_ERROR | UP_EV_READ;
    } else {
        revents = ((events & (UV_READABLE | UV_DISCONNECT)) ? UP_EV_READ : 0) |
                  ((events & UV_WRITABLE) ? UP_EV_WRITE : 0);
    }
    w->cb(w, revents);
}

int up_loop_watch(up_loop_t *loop, up_watcher_t *w, unsigned events)
{
    if (events == w->events)
        return 0;
    uv_poll_t *p = w->_backend;
    if (events == 0) {
        /* Not just stopped but closed: a stopped uv_poll still names its fd, and closing it
         * later makes libuv take the fd off its epoll set, by number. An unwatched fd may be
         * handed on by then (a hijack gives it to the app, who may close it, and the number
         * may come back as another connection's), so libuv must forget it now, while it is
         * still ours. The next watch makes a new handle. */
        uv_close((uv_handle_t *)p, poll_on_dropped); /* w->events != 0: the handle exists */
        w->_backend = NULL;
        w->events = 0;
        return 0;
    }
    if (p == NULL) {
        p = up_malloc(sizeof(*p));
        /* Fails for an fd that is not open (libuv tries it on its epoll set). */
        int r = uv_poll_init(loop->uv, p, w->fd);
        if (r != 0) {
            free(p);
            errno = -r;
            return -1;
        }
        p->data = w;
        w->_backend = p;
    }
    int uv_events = ((events & UP_EV_READ) ? UV_READABLE | UV_DISCONNECT : 0) |
                    ((events & UP_EV_WRITE) ? UV_WRITABLE : 0);
    int r = uv_poll_start(p, uv_events, poll_on_event);
    if (r != 0) {
        errno = -r;
        return -1;
    }
    w->events = events;
    return 0;
}

static void poll_on_closed(uv_handle_t *h)
{
    up_watcher_t *w = h->data;
    free(h);
    w->_backend = NULL;
    w->_on_closed(w, 0);
}

void up_loop_close_watcher(up_loop_t *loop, up_watcher_t *w, up_watcher_cb on_closed)
{
    w->_on_closed = on_closed;
    w->events = 0;
    uv_poll_t *p = w->_backend;
    if (p != NULL) {
        /* Stops polling now (the owner may close the fd at once); the handle's memory is
         * libuv's until the close callback. */
        uv_close((uv_handle_t *)p, poll_on_closed);
        return;
    }
    /* Never watched: nothing of libuv's refers to w, but on_closed must not run from here. */
    w->_next_closing = loop->closing;
    loop->closing = w;
    uv_idle_start(&loop->closer, closer_on_idle);
}

void up_loop_set_tick(up_loop_t *loop, unsigned interval_ms, up_loop_cb cb, void *data)
{
    loop->tick_cb = cb;
    loop->tick_data = data;
    if (cb == NULL)
        uv_timer_stop(&loop->tick);
    else
        uv_timer_start(&loop->tick, tick_on_timer, interval_ms, interval_ms);
}

void up_loop_set_wake(up_loop_t *loop, up_loop_cb cb, void *data)
{
    loop->wake_cb = cb;
    loop->wake_data = data;
}

void up_loop_wake(up_loop_t *loop)
{
    /* Safe from any thread and from a signal handler (libuv's promise); several sends before
     * the loop looks run the callback once. */
    uv_async_send(&loop->wake);
}

uint64_t up_loop_now(up_loop_t *loop)
{
    return uv_now(loop->uv);
}

int up_loop_is_loop_thread(up_loop_t *loop)
{
    return pthread_equal(pthread_self(), loop->thread);
}

int up_loop_uv_run_once(up_loop_t *loop, int timeout_ms)
{
    if (!loop->owns_uv)
        return -1;
    if (timeout_ms <= 0) {
        uv_run(loop->uv, UV_RUN_NOWAIT);
        return 0;
    }
    uv_timer_start(&loop->wait, wait_on_timer, (uint64_t)timeout_ms, 0);
    uv_run(loop->uv, UV_RUN_ONCE);
    uv_timer_stop(&loop->wait);
    return 0;
}
