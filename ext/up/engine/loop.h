#ifndef UP_LOOP_H
#define UP_LOOP_H

/* The event-loop backend interface. The engine only watches file descriptors, asks for a
 * periodic tick and wakes the loop from other threads; which backend does it (epoll here,
 * libuv in the Node addon) is picked at build time and the HTTP code never knows. */

#include <stdint.h>

#define UP_EV_READ 1u
#define UP_EV_WRITE 2u
#define UP_EV_ERROR 4u /* hang-up or socket error; delivered with READ so a read sees it */

typedef struct up_loop_t up_loop_t;
typedef struct up_watcher_t up_watcher_t;

typedef void (*up_watcher_cb)(up_watcher_t *w, unsigned revents);
typedef void (*up_loop_cb)(void *data);

/* Embedded as the first member of whatever owns the fd, so callbacks can cast back. */
struct up_watcher_t {
    int fd;
    unsigned events;  /* what is being watched now; 0 when not registered */
    up_watcher_cb cb;
};

up_loop_t *up_loop_new(void);
void up_loop_free(up_loop_t *loop);

/* Sets which events w->fd is watched for (0 stops watching; the fd stays open). Returns 0, or
 * -1 with errno set. Only the loop's own thread may call these. */
int up_loop_watch(up_loop_t *loop, up_watcher_t *w, unsigned events);
/* Forgets w before its fd is closed. */
void up_loop_unwatch(up_loop_t *loop, up_watcher_t *w);

/* cb(data) runs on the loop thread about every interval_ms (timeouts and the Date header). */
void up_loop_set_tick(up_loop_t *loop, unsigned interval_ms, up_loop_cb cb, void *data);
/* cb(data) runs on the loop thread after up_loop_wake; several wakes may run it once. */
void up_loop_set_wake(up_loop_t *loop, up_loop_cb cb, void *data);
/* Safe from any thread and from a signal handler. */
void up_loop_wake(up_loop_t *loop);

/* Milliseconds on a monotonic clock, read once per loop iteration. */
uint64_t up_loop_now(up_loop_t *loop);

/* The two halves of one iteration, split so a binding can wait without holding its
 * interpreter lock and dispatch with it: wait blocks at most until the next tick (or timeout_ms
 * when smaller and >= 0) and only collects events; dispatch runs their callbacks. wait returns
 * how many events it collected, or -1 when a signal cut it short (a binding may have a handler
 * to run). */
int up_loop_wait(up_loop_t *loop, int timeout_ms);
void up_loop_dispatch(up_loop_t *loop);

#endif
