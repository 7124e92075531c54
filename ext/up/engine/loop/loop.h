#ifndef UP_LOOP_H
#define UP_LOOP_H

/* The event-loop backend interface. The engine only watches file descriptors, asks for a
 * periodic tick and wakes the loop from other threads; which backend does it (epoll in
 * loop_epoll.c for MRI, libuv's uv_poll in the Node addon) is picked at build time and the HTTP
 * code never knows. Everything here can be built on either: a watcher is closed, not just
 * forgotten, and its owner is told when the backend has let go of it (libuv frees a poll
 * handle only in a later callback), so an owner never frees memory the backend still uses.
 *
 * How the loop is driven is the backend's business: Node runs libuv itself, and the MRI
 * binding drives epoll through loop_epoll.h. */

#include <stdint.h>

#define UP_EV_READ 1u
#define UP_EV_WRITE 2u
#define UP_EV_ERROR 4u /* hang-up or socket error; delivered with READ so a read sees it */
/* With READ, for a listening socket several processes watch: wake one of them, not all (a
 * hint; a backend without it wakes all, and they race for accept). */
#define UP_EV_EXCLUSIVE 8u

typedef struct up_loop_t up_loop_t;
typedef struct up_watcher_t up_watcher_t;

typedef void (*up_watcher_cb)(up_watcher_t *w, unsigned revents);
typedef void (*up_loop_cb)(void *data);

/* Embedded as the first member of whatever owns the fd, so callbacks can cast back. */
struct up_watcher_t {
    int fd;
    unsigned events; /* what is being watched now; 0 when not */
    up_watcher_cb cb;
    void *_backend;                 /* the backend's handle for fd (libuv: a uv_poll_t) */
    up_watcher_cb _on_closed;       /* set by up_loop_close_watcher */
    up_watcher_t *_next_closing;    /* the backend's list of watchers being closed */
};

up_loop_t *up_loop_new(void);
/* Runs the close callbacks still pending, then frees the loop. */
void up_loop_free(up_loop_t *loop);

/* Sets which events w->fd is watched for (0 pauses; the watcher stays usable). Returns 0, or
 * -1 with errno set; either way w->events says what is watched now (after a failure, the old
 * events or 0). Only the loop's own thread may call these. */
int up_loop_watch(up_loop_t *loop, up_watcher_t *w, unsigned events);
/* Stops watching w for good. on_closed(w, 0) runs later on the loop thread, never from inside
 * this call, once the backend no longer refers to w: only then may the owner free w. The fd
 * is the owner's to close, at once (the backend has stopped polling it). */
void up_loop_close_watcher(up_loop_t *loop, up_watcher_t *w, up_watcher_cb on_closed);

/* cb(data) runs on the loop thread about every interval_ms (timeouts and the Date header). */
void up_loop_set_tick(up_loop_t *loop, unsigned interval_ms, up_loop_cb cb, void *data);
/* cb(data) runs on the loop thread after up_loop_wake; several wakes may run it once. */
void up_loop_set_wake(up_loop_t *loop, up_loop_cb cb, void *data);
/* Safe from any thread and from a signal handler. */
void up_loop_wake(up_loop_t *loop);

/* Milliseconds on a monotonic clock, read once per loop iteration. */
uint64_t up_loop_now(up_loop_t *loop);
/* Whether the calling thread is the one that runs the loop. Any thread. */
int up_loop_is_loop_thread(up_loop_t *loop);

#endif
