#ifndef UP_SERVER_H
#define UP_SERVER_H

/* A server: its listening sockets, its connections, their limits and timeouts, and the bridge
 * to the binding that answers requests. One per worker process, driven by one loop. */

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "base/buffer.h"
#include "base/date.h"
#include "http1/http1_parser.h"
#include "loop/loop.h"
#include "loop/timer.h"
#include "transport/transport.h"

typedef struct up_conn_t up_conn_t;
typedef struct up_server_t up_server_t;

/* Work another thread hands the loop (a publish): run on the loop thread at its next wake-up,
 * in the order handed; run owns the task (frees it). */
typedef struct up_task_t {
    void (*run)(up_server_t *server, struct up_task_t *task);
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
/* The parser measures a head in an int (http1_parser.h): a binding refuses a larger limit. */
#define UP_MAX_HEAD_SIZE_LIMIT UP_HTTP1_MAX_HEAD_SIZE_LIMIT
#define UP_DEFAULT_MAX_HEADERS 100
/* Every request holds room for max_headers parsed fields (http1.h), so it is bounded. */
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

/* The timers a connection can be armed for. The fixed kinds have a list each in the server,
 * all of one duration from the config; UP_TIMER_IDLE is a protocol's timer of the
 * connection's own duration (a WebSocket's idle timeout), kept in a list per distinct duration
 * (up_server_idle_timers). */
typedef enum up_timer_kind_t {
    UP_TIMER_NONE,
    UP_TIMER_KEEPALIVE, /* idle between requests */
    UP_TIMER_HEAD,      /* a request head arriving: runs from its first byte, never restarted */
    UP_TIMER_BODY,      /* a pause while a body arrives */
    UP_TIMER_WRITE,     /* a pause while output waits for the client */
    UP_TIMER_LINGER,    /* a lingering close: runs from the shutdown, never restarted */
    UP_TIMER__FIXED,    /* the kinds above have a list each in server->timers */
    UP_TIMER_IDLE = UP_TIMER__FIXED /* the connection's own duration; restarts on every event */
} up_timer_kind_t;

/* Distinct UP_TIMER_IDLE durations with a list of their own; past them a connection gets the
 * list of the nearest duration (apps use a handful: a default and a few per-client values). */
#define UP_MAX_IDLE_DURATIONS 32

typedef enum up_request_result_t {
    UP_REQUEST_DONE,    /* the response is queued; the engine goes on with the connection */
    UP_REQUEST_DEFERRED /* the binding keeps the exchange and gives it back: up_conn_resume */
} up_request_result_t;

typedef struct up_server_handler_t {
    /* A request head and its whole body are in (conn->req). Runs on the loop's owner, with
     * the exchange already lent to the binding (up_conn_lend). The response is written with
     * the up_response_* calls, then DONE is returned, or DEFERRED, and the exchange goes on
     * elsewhere (another thread, later) until up_conn_resume. */
    up_request_result_t (*on_request)(up_conn_t *conn, void *user);
    /* A problem worth a log line that no request can report (accept failing, a spool file
     * that cannot be written). Loop thread. */
    void (*on_log)(const char *message, void *user);
    void *user;
    /* A request the engine answered itself (a static file), its response staged in conn->res:
     * for an access log and counters. Loop thread; optional (NULL). */
    void (*on_served)(up_conn_t *conn, void *user);
} up_server_handler_t;

/* One listening socket; connections point at theirs for SERVER_NAME/SERVER_PORT fallbacks, so
 * a listener closed at a graceful stop is kept (server->retired_listeners) until the server is
 * freed, which is after its last connection. Its transport (transport.h) is the one of every
 * connection it accepts, each opened with the listener's context at that moment (one
 * reference held by the listener; up_server_any_replace_context swaps it). */
typedef struct up_listener_t {
    up_watcher_t watcher;
    up_server_t *server;
    const up_transport_t *transport;
    void *transport_ctx; /* NULL for TCP; loop thread */
    char host[64]; /* numeric address ("127.0.0.1", "[::1]") */
    char port[8];
    int owned;     /* the engine bound it and closes it; an adopted one is only forgotten */
    struct up_listener_t *next;
} up_listener_t;

struct up_static_t;

struct up_server_t {
    up_loop_t *loop;
    up_server_config_t config;
    up_server_handler_t handler;
    /* The static file handler that answers before the binding is asked (static_file.h), NULL
     * for none. Set by the binding before the server runs; the binding frees it after the
     * server. */
    struct up_static_t *static_files;
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

up_server_t *up_server_new(up_loop_t *loop, const up_server_config_t *cfg,
                           const up_server_handler_t *handler);
/* Closes everything and detaches from the loop; the memory goes once the backend has let go of
 * every watcher (an epoll loop: in up_loop_free at the latest) and no connection is referenced
 * any more (up_conn_release). No other thread may still have an exchange lent to it. */
void up_server_free(up_server_t *server);
/* Hands task to the loop and wakes it. Any thread, while the server runs. */
void up_server_any_task(up_server_t *server, up_task_t *task);
/* References to the server's memory (conn.c, server.c). Any thread. */
void up_server_retain(up_server_t *server);
void up_server_release(up_server_t *server);
/* The list for UP_TIMER_IDLE timers of duration_ms (see UP_MAX_IDLE_DURATIONS). Loop thread. */
up_timer_list_t *up_server_idle_timers(up_server_t *server, unsigned duration_ms);

/* Binds every address host resolves to (NULL: all interfaces) on port and starts accepting.
 * Returns 0, or -1 with a message in err (a static or strerror string, e.g. "Address already
 * in use"). */
int up_server_listen(up_server_t *server, const char *host, const char *port, const char **err);
/* Starts accepting on a socket that is already bound and listening (inherited from a master). */
int up_server_adopt_listener(up_server_t *server, int fd, const char **err);
/* The same two for connections of another transport than TCP (TLS), each opened with ctx: the
 * server takes references of its own (transport->retain_context), the caller keeps its. */
int up_server_listen_with(up_server_t *server, const char *host, const char *port,
                          const up_transport_t *transport, void *ctx, const char **err);
int up_server_adopt_listener_with(up_server_t *server, int fd, const up_transport_t *transport,
                                  void *ctx, const char **err);
/* Every listener whose context is old takes ctx instead, for the connections it accepts from
 * then on (new certificates: connections already open go on with theirs). Any thread, while
 * the server runs: done on the loop thread at its next wake-up, with references of its own
 * (the caller keeps its references to both). */
void up_server_any_replace_context(up_server_t *server, const up_transport_t *transport,
                                   void *old_ctx, void *ctx);

/* Graceful stop, begun on the loop thread: stop accepting, close idle connections, and make
 * busy ones close after their current response. up_server_num_conns tells when it is done. */
void up_server_stop(up_server_t *server);
size_t up_server_num_conns(const up_server_t *server);
/* Closes whatever is still open, busy or not: the graceful deadline has passed. Connections
 * lent to other threads are LENT_BROKEN (their producers stop) and close when returned. */
void up_server_close_all(up_server_t *server);

/* The binding cannot take more requests now (every app thread busy): stop accepting, so the
 * kernel keeps new connections for sibling workers, until released. Loop thread. */
void up_server_hold_accept(up_server_t *server, int hold);

/* Writes addr's IP as text into host (IPv6 in brackets when bracket_ipv6, as in a URL) and its
 * port into *port; host is "" for other families. */
struct sockaddr;
void up_format_address(const struct sockaddr *addr, char *host, size_t host_size,
                       unsigned *port, int bracket_ipv6);


#endif
