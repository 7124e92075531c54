#ifndef UP_LOOP_UV_H
#define UP_LOOP_UV_H

/* Driving the libuv backend of loop.h (loop_uv.c). Inside Node the addon builds the loop on
 * Node's own uv loop, which Node runs: the engine's sockets are uv_poll handles next to Node's.
 * Outside Node (the engine's C tests) the backend makes a uv loop of its own, run one turn at a
 * time as the epoll backend's binding runs it (loop_epoll.h).
 *
 * The loop thread (up_loop_is_loop_thread) is the thread that created the loop: a uv loop is
 * run by the thread that owns it, Node's main thread (or a worker_threads thread) for the
 * addon, the test's thread for the tests. */

#include <uv.h>
#include "loop/loop.h"

/* A loop on uv, which the caller's thread runs; uv must outlive the returned loop's
 * up_loop_free (whose handles close in uv's next iteration). The tick and wake-up handles are
 * unreferenced: only watched sockets keep Node's loop alive. Returns NULL when a handle cannot
 * be made. Loop thread. */
up_loop_t *up_loop_uv_new(uv_loop_t *uv);

/* For a loop made by up_loop_new (one that owns its uv loop): runs one iteration, waiting at
 * most timeout_ms (0: not at all) for events, and runs their callbacks, the tick when due and
 * the close callbacks due. Returns 0, or -1 for a loop on someone else's uv loop. Loop
 * thread. */
int up_loop_uv_run_once(up_loop_t *loop, int timeout_ms);

#endif
