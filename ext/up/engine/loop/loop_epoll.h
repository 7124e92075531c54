#ifndef UP_LOOP_EPOLL_H
#define UP_LOOP_EPOLL_H

/* Driving the epoll backend (loop_epoll.c). Only a binding that owns its loop calls these; the
 * engine itself uses loop.h alone, and the Node addon, whose loop libuv drives, has no
 * counterpart. */

#include "loop/loop.h"

/* The two halves of one iteration, split so a binding can wait without holding its
 * interpreter lock and dispatch with it: wait blocks at most until the next tick (or timeout_ms
 * when smaller and >= 0) and only collects events; dispatch runs their callbacks, the tick when
 * due, and then the close callbacks of watchers closed so far. wait returns how many events it
 * collected, or -1 with errno set: EINTR when a signal cut it short (a binding may have a
 * handler to run), anything else when the loop itself is broken (its epoll descriptor closed
 * or replaced) and waiting again would fail again at once: the binding must stop the loop. */
int up_loop_wait(up_loop_t *loop, int timeout_ms);
void up_loop_dispatch(up_loop_t *loop);
/* The calling thread runs the loop from now on (owned = 1), or no longer (0); what
 * up_loop_is_loop_thread answers. A binding that runs the loop on several threads in turn sets
 * it whenever one takes the loop over. */
void up_loop_set_owner(up_loop_t *loop, int owned);

#endif
