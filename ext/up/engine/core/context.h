#ifndef UP_CONTEXT_H
#define UP_CONTEXT_H

/* A server's per-loop context (up_context_t, one per worker process, driven by one loop): its
 * limits and timeouts, the bridge to the binding that answers requests, the buffer pool, the
 * Date header, the timer lists, and the lists other threads hand the loop work through (mail,
 * tasks). Connections (conn.h) live in it; its listening sockets and its lifecycle (new, stop,
 * free) are server/server.h's, above the connections. Its functions, in this file and in
 * server/server.h, keep the up_server_ prefix (up_server_retain, up_server_new), and variables
 * holding it are called server. */

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buffer.h"
#include "base/date.h"
#include "core/listener.h"
#include "loop/loop.h"
#include "loop/timer.h"

typedef struct up_conn_t up_conn_t;
typedef struct up_exchange_t up_exchange_t;

/* Work another thread hands the loop (a publish): run on the loop thread at its next wake-up,
 * in the order handed; run owns the task (frees it). */
typedef struct up_task_t {
    void (*run)(up_context_t *server, struct up_task_t *task);
    struct up_task_t *_next;
} up_task_t;

/* Limits are checked where bytes enter; each has a CLI option. */
typedef struct up_server_config_t {
    size_t max_head_size;     /* request line + headers, bytes: 431 past it (at most
                               * UP_MAX_HEAD_SIZE_LIMIT) */
    size_t max_headers;       /* header fields per request: 431 past it */
    uint64_t max_body_size;   /* bytes, 0 for no limit: 413 past it, before reading */
    uint64_t spool_threshold; /* bodies bigger than this go to a temporary file */
    unsigned head_timeout_ms; /* first byte to the end of the head: 408 */
    unsigned body_timeout_ms; /* longest pause while a body is read: 408 */
    unsigned keepalive_timeout_ms; /* idle connection between requests: closed */
    unsigned write_timeout_ms;     /* longest wait for a client to take response bytes */
    unsigned max_pipeline;    /* responses held before they are written out */
    char tmp_dir[4096];       /* where bodies are spooled */
    int exclusive_accept;     /* several processes share the listening sockets: wake one */
} up_server_config_t;

#define UP_DEFAULT_MAX_HEAD_SIZE (64 * 1024)
/* A head's length is measured in an int (http1/http1_parser.h holds its parser to the same
 * bound): a binding refuses a larger limit. */
#define UP_MAX_HEAD_SIZE_LIMIT (1024 * 1024 * 1024)
#define UP_DEFAULT_MAX_HEADERS 100
/* Every request holds room for max_headers parsed fields (http1/http1.h), so it is bounded. */
#define UP_MAX_HEADERS_LIMIT 10000
#define UP_DEFAULT_MAX_BODY_SIZE (1024ull * 1024 * 1024)
#define UP_DEFAULT_SPOOL_THRESHOLD (1024 * 1024)
#define UP_DEFAULT_HEAD_TIMEOUT_MS 10000
#define UP_DEFAULT_BODY_TIMEOUT_MS 30000
#define UP_DEFAULT_KEEPALIVE_TIMEOUT_MS 20000
#define UP_DEFAULT_WRITE_TIMEOUT_MS 30000
#define UP_DEFAULT_MAX_PIPELINE 32
/* A lingering close reads and drops what the client still sends, so that an error response is
 * not destroyed by a TCP reset before the client reads it; for at most this long, and at most
 * UP_LINGER_MAX_BYTES in all (then it closes: a client still sending that much is not reading),
 * UP_LINGER_MAX_READ_PER_EVENT of them per event, so one client never holds the loop. */
#define UP_LINGER_TIMEOUT_MS 2000
#define UP_LINGER_MAX_BYTES (1024 * 1024)
#define UP_LINGER_MAX_READ_PER_EVENT (64 * 1024)

void up_server_config_defaults(up_server_config_t *cfg);

/* Kinds from UP_TIMER_PROTOCOL on that the protocols share out among themselves (HTTP/1 has
 * two). */
#define UP_MAX_PROTOCOL_TIMERS 4

/* The timers a connection can be armed for. The fixed kinds have a list each in the server,
 * all of one duration: the engine's own from the config, a protocol's set by that protocol
 * when the server is made (HTTP/1's: http1/http1.h). UP_TIMER_IDLE is a protocol's timer of
 * the connection's own duration (a WebSocket's idle timeout), kept in a list per distinct
 * duration (up_server_idle_timers). */
typedef enum up_timer_kind_t {
    UP_TIMER_NONE,
    UP_TIMER_HEAD,     /* a transport's handshake, and a protocol's start of a request (HTTP/1's
                        * head): runs from its first byte, never restarted (head_timeout_ms) */
    UP_TIMER_WRITE,    /* a pause while output waits for the client */
    UP_TIMER_LINGER,   /* a lingering close: runs from the shutdown, never restarted */
    UP_TIMER_PROTOCOL, /* the first of UP_MAX_PROTOCOL_TIMERS kinds a protocol names and sets
                        * (up_timer_list_init on server->timers[kind]); they restart on every
                        * event */
    /* the kinds above have a list each in server->timers */
    UP_TIMER__FIXED = UP_TIMER_PROTOCOL + UP_MAX_PROTOCOL_TIMERS,
    UP_TIMER_IDLE = UP_TIMER__FIXED /* the connection's own duration; restarts on every event */
} up_timer_kind_t;

/* Distinct UP_TIMER_IDLE durations with a list of their own; past them a connection gets the
 * list of the nearest duration (apps use a handful: a default and a few per-client values). */
#define UP_MAX_IDLE_DURATIONS 32

typedef enum up_request_result_t {
    UP_REQUEST_DONE,    /* the response is queued; the engine goes on with the connection */
    UP_REQUEST_DEFERRED /* the binding keeps the exchange and gives it back: up_conn_lent_return */
} up_request_result_t;

typedef struct up_server_handler_t {
    /* A request head and its whole body are in (ex->req). Runs on the loop's owner, with
     * the exchange already lent to the binding (up_conn_loop_lend). The response is written with
     * the up_response_* calls, then DONE is returned, or DEFERRED, and the exchange goes on
     * elsewhere (another thread, later) until up_conn_lent_return. */
    up_request_result_t (*on_request)(up_exchange_t *ex, void *user);
    /* A problem worth a log line that no request can report (accept failing, a spool file
     * that cannot be written). Loop thread. */
    void (*on_log)(const char *message, void *user);
    void *user;
    /* A request the engine answered itself (a static file), its response staged in ex->res:
     * for an access log and counters. Loop thread; optional (NULL). */
    void (*on_served)(up_exchange_t *ex, void *user);
} up_server_handler_t;

/* One link of the handler chain a protocol hands every complete request to
 * (up_server_loop_handle), the app being the last: the static files. On the loop thread,
 * before the request is lent, serve answers it, staging a whole response, and returns 1, or
 * returns 0 with nothing staged and the response writer as it found it, and the next link is
 * asked. A handler answers only the requests it knows: a request that may become another
 * protocol (an upgrade, an event stream) is the app's. */
typedef struct up_handler_t {
    int (*serve)(void *data, up_exchange_t *ex);
    void *data;
} up_handler_t;

#define UP_MAX_HANDLERS 4

struct up_context_t {
    up_loop_t *loop;
    up_server_config_t config;
    up_server_handler_t handler;
    /* The handlers asked before the app, in order (up_server_add_handler): set by the binding
     * before the server runs; what their data points at outlives the server. */
    up_handler_t handlers[UP_MAX_HANDLERS];
    size_t num_handlers;
    up_buffer_pool_t pool;
    up_date_t date;
    up_listener_t *listeners;
    up_listener_t *retired_listeners; /* closed, still pointed at by connections */
    up_conn_t *conns; /* every open connection, for shutdown */
    size_t num_conns;
    int stopping;
    int accept_paused;  /* accept failed for lack of descriptors: retried on the next tick */
    int accept_held;    /* the binding cannot take more requests now (up_server_hold_accept) */
    up_timer_list_t timers[UP_TIMER__FIXED];
    up_timer_list_t idle_timers[UP_MAX_IDLE_DURATIONS];
    int num_idle_timers;
    /* Connections with mail from other threads (conn.h): a lock-free stack the loop takes
     * whole on its wake-up. */
    _Atomic(up_conn_t *) mail_head;
    _Atomic(up_task_t *) task_head; /* the same for up_server_any_task */
    up_conn_t *deferred; /* connections to write at the end of the wake-up (conn.h) */
    up_conn_t *deferred_reads; /* connections whose transport holds input (conn.h) */
    /* The owner's reference (until up_server_free), one per connection not yet freed and one
     * per watcher the backend has not let go of: the last release frees the server, on
     * whichever thread makes it (a connection may outlive its close in another thread's
     * handle). */
    atomic_size_t refs;
};

/* Hands task to the loop and wakes it. Any thread, while the server runs. */
void up_server_any_task(up_context_t *server, up_task_t *task);
/* References to the server's memory (conn.c, server.c). Any thread. */
void up_server_retain(up_context_t *server);
void up_server_release(up_context_t *server);
/* Appends a handler to the chain, after those added before it and before the app. Returns 0,
 * or -1 when the chain holds UP_MAX_HANDLERS already. Before the server runs. */
int up_server_add_handler(up_context_t *server, int (*serve)(void *data, up_exchange_t *ex),
                          void *data);
/* What became of a request handed to the chain. */
typedef enum up_handled_t {
    UP_HANDLED_HERE,    /* a handler answered it on the loop thread (on_served was told); not
                         * lent */
    UP_HANDLED_DONE,    /* the app answered it: lent, and returned to be reclaimed
                         * (up_conn_loop_reclaim) */
    UP_HANDLED_DEFERRED /* the app keeps it and returns it later (the protocol's on_resume) */
} up_handled_t;
/* How every protocol hands a complete request to the chain: the handlers in turn, then the
 * app (handler.on_request), which gets the exchange only after lend, the protocol's way of
 * lending it (its own state made ready for a borrower, then up_conn_loop_lend). The response
 * writer's state must be fresh (up_response_reset). Loop thread. */
up_handled_t up_server_loop_handle(up_context_t *server, up_exchange_t *ex,
                                   void (*lend)(up_exchange_t *ex));
/* The list for UP_TIMER_IDLE timers of duration_ms (see UP_MAX_IDLE_DURATIONS). Loop thread. */
up_timer_list_t *up_server_idle_timers(up_context_t *server, unsigned duration_ms);

#endif
