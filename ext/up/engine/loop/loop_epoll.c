/* The epoll backend of loop.h, used by the MRI binding. Level-triggered: a connection that
 * stops reading mid-buffer (pipelining back-pressure) is simply not watched for reads, and no
 * readiness is ever lost between a partial read and the next wait. Closed watchers are kept on
 * a list until the end of the iteration, as libuv keeps a closing handle, so both backends give
 * an owner the same guarantee. */

#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include "base/memory.h"
#include "loop/loop_epoll.h"

#define MAX_EVENTS 256

struct up_loop_t {
    int epfd;
    up_watcher_t wake_watcher;
    up_loop_cb wake_cb;
    void *wake_data;
    up_loop_cb tick_cb;
    void *tick_data;
    unsigned tick_interval;
    uint64_t next_tick;
    uint64_t now;
    up_watcher_t *closing; /* closed watchers whose on_closed has not run yet */
    /* The thread that runs the loop now, if owned (up_loop_set_owner): a binding may run it on
     * several threads, one at a time, while other threads ask up_loop_is_loop_thread. Both
     * change under those readers, so both are atomic: owner is stored before owned is set and
     * read after owned is seen set, so a reader that sees a new owner flag sees its owner. */
    _Atomic(pthread_t) owner;
    atomic_int owned;
    int num_ready;
    struct epoll_event ready[MAX_EVENTS];
};

static uint64_t clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void wake_on_read(up_watcher_t *w, unsigned revents)
{
    up_loop_t *loop = (up_loop_t *)((char *)w - offsetof(up_loop_t, wake_watcher));
    uint64_t count;
    (void)revents;
    while (read(w->fd, &count, sizeof(count)) < 0 && errno == EINTR)
        ;
    if (loop->wake_cb != NULL)
        loop->wake_cb(loop->wake_data);
}

up_loop_t *up_loop_new(void)
{
    up_loop_t *loop = up_calloc(1, sizeof(*loop));
    loop->epfd = epoll_create1(EPOLL_CLOEXEC);
    loop->wake_watcher.fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (loop->epfd < 0 || loop->wake_watcher.fd < 0) {
        up_loop_free(loop);
        return NULL;
    }
    loop->wake_watcher.cb = wake_on_read;
    if (up_loop_watch(loop, &loop->wake_watcher, UP_EV_READ) != 0) {
        up_loop_free(loop);
        return NULL;
    }
    loop->now = clock_ms();
    return loop;
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

void up_loop_free(up_loop_t *loop)
{
    run_closing(loop);
    if (loop->wake_watcher.fd >= 0)
        close(loop->wake_watcher.fd);
    if (loop->epfd >= 0)
        close(loop->epfd);
    free(loop);
}

int up_loop_watch(up_loop_t *loop, up_watcher_t *w, unsigned events)
{
    struct epoll_event ev = {0};
    int op;
    if (events == w->events)
        return 0;
    if (events == 0) {
        op = EPOLL_CTL_DEL;
    } else {
        op = w->events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD;
        ev.events = ((events & UP_EV_READ) ? EPOLLIN | EPOLLRDHUP : 0) |
                    ((events & UP_EV_WRITE) ? EPOLLOUT : 0);
        ev.data.ptr = w;
#ifdef EPOLLEXCLUSIVE
        if (events & UP_EV_EXCLUSIVE) {
            /* Only an ADD may say EPOLLEXCLUSIVE (a MOD of it is EINVAL): a change is a DEL and an
             * ADD. Listeners change rarely (a pause, a hold). */
            if (w->events != 0) {
                if (epoll_ctl(loop->epfd, EPOLL_CTL_DEL, w->fd, &ev) != 0)
                    return -1;
                w->events = 0; /* unwatched now: what a failed ADD below leaves it */
            }
            op = EPOLL_CTL_ADD;
            ev.events = EPOLLIN | EPOLLEXCLUSIVE;
        }
#endif
    }
    if (epoll_ctl(loop->epfd, op, w->fd, &ev) != 0)
        return -1;
    w->events = events;
    return 0;
}

void up_loop_close_watcher(up_loop_t *loop, up_watcher_t *w, up_watcher_cb on_closed)
{
    if (w->events != 0)
        up_loop_watch(loop, w, 0);
    /* An event for w may still sit in this iteration's ready list; drop it so the callback of
     * a closed owner never runs. */
    for (int i = 0; i < loop->num_ready; i++) {
        if (loop->ready[i].data.ptr == w)
            loop->ready[i].data.ptr = NULL;
    }
    w->_on_closed = on_closed;
    w->_next_closing = loop->closing;
    loop->closing = w;
}

void up_loop_set_tick(up_loop_t *loop, unsigned interval_ms, up_loop_cb cb, void *data)
{
    loop->tick_interval = interval_ms;
    loop->tick_cb = cb;
    loop->tick_data = data;
    loop->next_tick = clock_ms() + interval_ms;
}

void up_loop_set_wake(up_loop_t *loop, up_loop_cb cb, void *data)
{
    loop->wake_cb = cb;
    loop->wake_data = data;
}

void up_loop_wake(up_loop_t *loop)
{
    uint64_t one = 1;
    ssize_t r;
    /* EAGAIN means the counter is already non-zero: the loop will wake anyway. */
    do {
        r = write(loop->wake_watcher.fd, &one, sizeof(one));
    } while (r < 0 && errno == EINTR);
}

uint64_t up_loop_now(up_loop_t *loop)
{
    return loop->now;
}

int up_loop_is_loop_thread(up_loop_t *loop)
{
    return atomic_load(&loop->owned) && pthread_equal(pthread_self(), atomic_load(&loop->owner));
}

void up_loop_set_owner(up_loop_t *loop, int owned)
{
    if (owned)
        atomic_store(&loop->owner, pthread_self());
    atomic_store(&loop->owned, owned);
}

int up_loop_wait(up_loop_t *loop, int timeout_ms)
{
    int wait = -1;
    if (loop->tick_cb != NULL) {
        uint64_t now = clock_ms();
        wait = loop->next_tick > now ? (int)(loop->next_tick - now) : 0;
    }
    if (timeout_ms >= 0 && (wait < 0 || timeout_ms < wait))
        wait = timeout_ms;
    int n = epoll_wait(loop->epfd, loop->ready, MAX_EVENTS, wait);
    int saved = errno;
    loop->num_ready = n > 0 ? n : 0;
    loop->now = clock_ms();
    errno = saved;
    return n;
}

void up_loop_dispatch(up_loop_t *loop)
{
    for (int i = 0; i < loop->num_ready; i++) {
        up_watcher_t *w = loop->ready[i].data.ptr;
        if (w == NULL)
            continue;
        uint32_t e = loop->ready[i].events;
        unsigned revents = ((e & (EPOLLIN | EPOLLRDHUP)) ? UP_EV_READ : 0) |
                           ((e & EPOLLOUT) ? UP_EV_WRITE : 0) |
                           ((e & (EPOLLERR | EPOLLHUP)) ? UP_EV_ERROR | UP_EV_READ : 0);
        w->cb(w, revents);
    }
    loop->num_ready = 0;
    if (loop->tick_cb != NULL && loop->now >= loop->next_tick) {
        loop->next_tick = loop->now + loop->tick_interval;
        loop->tick_cb(loop->tick_data);
    }
    run_closing(loop);
}
