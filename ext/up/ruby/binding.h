#ifndef UP_RUBY_BINDING_H
#define UP_RUBY_BINDING_H

/* What the files of the MRI binding share. The binding only translates: engine slices become
 * the Rack env, the app is called, and its response is walked back into up_response_* calls.
 * No sockets and no parsing here. */

#include <ruby.h>
#include <ruby/thread.h>
#include <pthread.h>
#include <time.h>
#include "core/conn.h"
#include "core/exchange.h"
#include "http1/access_log.h"
#include "http1/http1.h"
#include "http1/response.h"
#include "loop/loop_epoll.h"
#include "metrics.h"
#include "pubsub/pubsub.h"
#include "server/server.h"
#include "sse/sse.h"
#include "websocket/websocket.h"

struct pin_t;
struct up_rb_server_t;
struct up_rb_client_t;

/* An item of the app threads' queue: an exchange whose request waits (linked through
 * ex->user), or a client whose callbacks wait (client.c, linked through its job_next); bit 0
 * tells which (set: a client). 0 is none. */
typedef uintptr_t up_rb_job_t;

static inline up_rb_job_t up_rb_job_of_exchange(up_exchange_t *ex)
{
    return (up_rb_job_t)ex;
}

static inline up_rb_job_t up_rb_job_of_client(struct up_rb_client_t *client)
{
    return (up_rb_job_t)client | 1u;
}

static inline int up_rb_job_is_client(up_rb_job_t job)
{
    return (job & 1u) != 0;
}

static inline struct up_rb_client_t *up_rb_job_client(up_rb_job_t job)
{
    return (struct up_rb_client_t *)(job & ~(up_rb_job_t)1u);
}

static inline up_exchange_t *up_rb_job_exchange(up_rb_job_t job)
{
    return (up_exchange_t *)job;
}

/* One app thread as the watchdog sees it (thread_pool.c, watchdog.c). */
typedef struct up_rb_app_thread_t {
    struct up_rb_server_t *srv;
    int syscall_fd; /* its /proc/self/task/TID/syscall (running, or waiting in which call?), -1
                     * if unavailable */
    int in_app;  /* running a request; under queue_lock */
    uint64_t call_started; /* when its request began; under queue_lock */
} up_rb_app_thread_t;

/* Who runs a worker's loop: chosen by measurement, or forced by --[no-]io-thread. */
typedef enum up_rb_loop_policy_t {
    UP_RB_LOOP_AUTO,
    UP_RB_LOOP_TURNS,  /* --no-io-thread: app threads take turns */
    UP_RB_LOOP_THREAD  /* --io-thread: a native thread of its own */
} up_rb_loop_policy_t;

/* What placement.c measures of the app calls, and what it decided. Touched only by threads
 * holding the GVL (app threads in a request, Server#stats), so it needs no lock. */
typedef struct up_rb_placement_t {
    unsigned calls;        /* app calls since the last one sampled */
    unsigned samples;      /* sampled calls in the current window */
    uint64_t cpu_ns;       /* their thread CPU time, summed */
    uint64_t wall_ns;      /* their wall time, summed */
    uint64_t window_start; /* 0: the window starts with its first sample */
    int votes;             /* windows in a row that called for the other place */
    int votes_needed;      /* before the loop moves (placement.c: VOTES, more after flaps) */
    uint64_t last_switch;
    double last_share;     /* cpu_ns / wall_ns of the last window; -1 before the first */
    unsigned long switches;
} up_rb_placement_t;

/* One app call being measured (placement.c); sampled is 0 for a call that is not. */
typedef struct up_rb_call_sample_t {
    int sampled;
    uint64_t cpu_start, wall_start;
    long blocks_start; /* the thread's voluntary context switches */
} up_rb_call_sample_t;

/* The engine's log lines, queued by whichever thread runs a turn (without the GVL) and
 * written by the main thread (turn.c). */
#define UP_RB_LOG_LINES 32
typedef struct up_rb_log_queue_t {
    pthread_mutex_t lock;
    int count;
    unsigned long dropped;
    char lines[UP_RB_LOG_LINES][256];
} up_rb_log_queue_t;

/* One Up::Server: an engine server, its loop, the app and the threads that call it. */
typedef struct up_rb_server_t {
    VALUE self;
    /* The Ruby object's reference and one per Up::Client that points here (client.c), so that
     * a client the app keeps, collected or marked after the server, finds valid memory: the
     * server's GC free tears the engine down, the last release frees the struct. GVL. */
    long refs;
    VALUE app;
    /* The constant pairs of every env, one frozen Hash per transport (plain TCP, TLS: the URL
     * scheme, HTTPS, whether the socket can be hijacked), copied per request; an HTTP/2 stream
     * on plain TCP has its own, since it cannot be hijacked (TLS cannot either). */
    VALUE env_template, env_template_tls, env_template_h2c;
    VALUE empty_input;  /* rack.input of every request without a body (it is stateless) */
    VALUE threads;      /* Array of the app threads while running, else nil */
    up_loop_t *loop;
    up_context_t *server;
    up_server_config_t config;
    int num_threads;        /* app threads, at least 1 */
    int early_hints;        /* whether envs get rack.early_hints */
    int http2;              /* listeners speak HTTP/2 beside HTTP/1.1 (h2 by ALPN, h2c) */
    unsigned shutdown_timeout_ms;
    int running;
    /* The stop: requested from any thread or a trap handler (then a wake), begun by the next
     * loop turn, finished when every connection is closed or at the deadline, which is set
     * when the stop is requested: one deadline for the whole stop. */
    atomic_int stop_requested;
    int stopping; /* whoever runs the loop */
    atomic_int finished;
    _Atomic uint64_t deadline_ns;
    int main_wake_fd; /* an eventfd that wakes the thread in Server#run (thread_pool.c) */
    /* Whoever holds loop_lock runs the loop: waits for events, dispatches them, takes back
     * given-back exchanges (turn.c), always without the GVL. Taken only with trylock. */
    pthread_mutex_t loop_lock;
    /* The watchdog's thread holds the loop because every app thread is in the app
     * (watchdog.c); loop_wanted counts the app threads that asked for it back. Under
     * queue_lock. */
    int sitting;
    int loop_wanted;
    unsigned long sittings; /* since the start, for stats */
    /* Where the loop runs: app threads taking turns, or a native thread of its own while app
     * threads only run requests (docs/configuration.md, Threads). --io-thread and
     * --no-io-thread force one; else the worker moves between them by what its app calls do
     * (placement.c). loop_on_thread is the current choice, read by any thread, changed only
     * by up_rb_pool_place_loop. */
    up_rb_loop_policy_t loop_policy;
    atomic_int loop_on_thread;
    int io_thread_started;
    pthread_t io_thread;
    pthread_cond_t io_thread_cond; /* the loop's thread waits there for its turn; queue_lock */
    /* Each time the loop's thread gave the loop up (or stopped waiting for it): an app thread
     * that found the loop taken compares it, under queue_lock, before it sleeps, so that it
     * never sleeps through the moment the loop came free with nobody to take it. */
    atomic_ulong loop_releases;
    up_rb_placement_t placement;
    /* The watchdog may read each app thread's /proc/self/task/TID/syscall to tell a call that
     * waits for IO from one that computes (watchdog.c). That needs one native thread per Ruby
     * thread, which Ruby's M:N threads (3.3+, RUBY_MN_THREADS=1) do not give: then every call
     * counts as waiting, the safe side. */
    int thread_looks;
    /* Work waiting for an app thread (up_rb_job_t): requests and clients with events. Under
     * queue_lock. */
    pthread_mutex_t queue_lock;
    pthread_cond_t queue_cond;
    up_rb_job_t queue_head, queue_tail;
    int queue_len;
    int sleepers;  /* threads waiting to be promoted */
    int promoted;  /* promotions handed out and not yet taken */
    _Atomic int demoted; /* threads asked to go back to sleep, and not yet gone */
    unsigned long promotions, demotions; /* since the start, for stats */
    int in_app;    /* threads inside a request */
    up_rb_app_thread_t *app_threads; /* num_threads of them while running */
    /* Requests finished, for the watchdog (watchdog.c). */
    _Atomic unsigned long completed;
    /* The engine's static file handler (static.c), NULL for none, and the requests it answered
     * (apart from completed: they are no sign of app threads making progress). */
    struct up_static_t *static_files;
    _Atomic unsigned long static_served;
    pthread_t watchdog;
    pthread_cond_t watchdog_cond;
    int watchdog_running;
    int watchdog_asleep; /* waiting for a request to start (under queue_lock) */
    /* Work the current loop turn found, queued in one go by up_rb_pool_publish so that a burst
     * costs one lock. Loop-lock holder only. */
    up_rb_job_t batch_head, batch_tail;
    /* Upgraded connections' clients (client.c), marked by the server; touched with the GVL. */
    struct up_rb_client_t *clients;
    VALUE server_client; /* runs Up.subscribe blocks (subscription.c); nil until one */
    /* For stats: upgraded connections open now, messages received and written. Any thread. */
    atomic_long websockets_open, sse_open, messages_in, messages_out;
    up_pubsub_t *pubsub; /* this server's subscriptions (engine pubsub.h) */
    up_ws_settings_t ws_settings;
    unsigned sse_heartbeat_ms;
    /* Large body Strings the output queues reference (shared_string.c). */
    pthread_mutex_t pin_lock;
    struct pin_t *pins;
    up_rb_log_queue_t log_queue;
    up_rb_metrics_t metrics; /* --metrics-url: by status and duration (metrics.h) */
    up_access_log_t access_log; /* last: its buffer is large (engine/http1/access_log.h) */
} up_rb_server_t;

/* Frozen, GC-registered Strings and IDs made once at load time (env.c). */
extern VALUE up_rb_key_request_method, up_rb_key_rack_input, up_rb_key_response_finished,
    up_rb_key_rack_early_hints, up_rb_key_rack_upgrade;
extern VALUE up_rb_key_rack_hijack; /* hijack.c's per-request callable */

void up_rb_server_retain(up_rb_server_t *srv);
void up_rb_server_release(up_rb_server_t *srv);

void up_rb_init_env(VALUE mUp);
/* hijack: whether the connection may be hijacked (the transport can detach it, HTTP/1). */
VALUE up_rb_env_template(up_rb_server_t *srv, const up_transport_t *transport, int hijack);
/* What of an env the request's end detaches (nil when the env has none). */
typedef struct up_rb_env_parts_t {
    VALUE input, hints, hijack;
} up_rb_env_parts_t;
/* The env of ex's request; *parts gets its rack.input, rack.early_hints and rack.hijack. */
VALUE up_rb_env_build(up_rb_server_t *srv, up_exchange_t *ex, up_rb_env_parts_t *parts);

void up_rb_init_input(VALUE mUp);
/* rack.input over the request body; detach makes it read as closed once the request is over,
 * since the bytes it points at belong to the connection. */
VALUE up_rb_input_new(const up_request_body_t *body);
VALUE up_rb_input_empty(void);
void up_rb_input_detach(VALUE input);

void up_rb_init_early_hints(VALUE mUp);
VALUE up_rb_early_hints_new(up_exchange_t *ex);
void up_rb_early_hints_detach(VALUE hints);

void up_rb_init_stream(VALUE mUp);
void up_rb_init_body(VALUE mUp);
void up_rb_init_request_handler(VALUE mUp);
/* The stream handed to a streaming body's call; closed? tells the body walker it is done. */
VALUE up_rb_stream_new(up_rb_server_t *srv, up_exchange_t *ex, VALUE input);
int up_rb_stream_closed(VALUE stream);
void up_rb_stream_detach(VALUE stream);

/* Calls the app for ex's request and queues its response; never raises. An app
 * thread, the exchange lent to it. */
void up_rb_handle_request(up_rb_server_t *srv, up_exchange_t *ex);

/* Writes a validated response (body.c). Returns nil, or the exception that broke it. Sets
 * *status_out and *headers_out for rack.response_finished. */
VALUE up_rb_write_response(up_rb_server_t *srv, up_exchange_t *ex, VALUE env, VALUE response,
                           VALUE *status_out, VALUE *headers_out);

/* Adds a Rack headers Hash to the response being started: "rack." keys are skipped, Array
 * values and "\n"-joined Rack 2 values become one field line each. Returns 0, or -1 with a
 * message saying what was invalid. */
int up_rb_add_headers(up_exchange_t *ex, VALUE headers, VALUE *message);
/* The same, leaving out the fields named in skip (lower case, NULL-terminated). */
int up_rb_add_headers_except(up_exchange_t *ex, VALUE headers, const char *const *skip,
                             VALUE *message);

/* Queues one body part (a String): a copy, or a reference to a large one. Returns 0, or -1
 * when the client is gone. */
int up_rb_queue_part(up_rb_server_t *srv, up_exchange_t *ex, VALUE part);
/* Hands what the response staged to the loop, writing it at once when this thread can own the
 * loop. Returns 0, or -1 when the client is gone. */
int up_rb_hand_over(up_rb_server_t *srv, up_exchange_t *ex);
/* The same; then, past the backlog limit, waits for the client to take some (back-pressure on
 * this producer only). */
int up_rb_send(up_rb_server_t *srv, up_exchange_t *ex);

/* App threads not asleep waiting to be promoted, counting those promoted and not yet up;
 * queue_lock held. */
static inline int up_rb_awake_threads(const up_rb_server_t *srv)
{
    return srv->num_threads - srv->sleepers + srv->promoted;
}

static inline int up_rb_on_loop_thread(up_conn_t *conn)
{
    return up_loop_is_loop_thread(conn->server->loop);
}

/* A reference to str's bytes for an output queue (shared_string.c); the caller releases it
 * once queued. The server marks what is referenced. */
up_shared_t *up_rb_shared_string(up_rb_server_t *srv, VALUE str);
void up_rb_mark_shared_strings(up_rb_server_t *srv);

/* Logs an exception through Up::Server#report_exception (lib/up/server.rb). */
void up_rb_report(up_rb_server_t *srv, VALUE error, VALUE env);

/* Loop turns (turn.c). One turn: begins or checks the stop, collects events (waiting at most
 * timeout_ms, -1 for no limit), dispatches them and queues the requests found. Returns 1 once
 * the server is finished. The caller holds loop_lock and NOT the GVL: nothing here touches
 * Ruby. */
int up_rb_turn(up_rb_server_t *srv, int timeout_ms);
/* The engine's log callback: any thread, no GVL; the line is queued for the main thread. */
void up_rb_on_log(const char *message, void *user);
/* Asks for a graceful stop that cuts off what still runs after ms milliseconds; a later
 * request only brings the deadline nearer. Any thread, without the GVL too. */
void up_rb_request_stop(up_rb_server_t *srv, uint64_t ms);
/* Writes the queued log lines; with the GVL. */
void up_rb_log_flush(up_rb_server_t *srv);
/* Closes what is left once no thread serves any more, and lets the loop let go of it. */
void up_rb_finish(up_rb_server_t *srv);
uint64_t up_rb_now_ns(void);

/* The app threads (thread_pool.c). push collects work during a turn (loop-lock holder);
 * publish hands the collected work to the threads at the end of it. */
void up_rb_pool_push(up_rb_server_t *srv, up_rb_job_t job);
void up_rb_pool_publish(up_rb_server_t *srv);
/* Puts job at the end of the queue (a client that ran its share and has more); queue_lock held. */
void up_rb_pool_append_locked(up_rb_server_t *srv, up_rb_job_t job);
/* Runs the server on num_threads app threads until it is finished; the calling thread only
 * waits (and runs signal traps) and enforces the stop deadline. */
void up_rb_pool_run(up_rb_server_t *srv);
/* While an app call waits for its output to drain: runs loop turns when no other thread
 * does, else waits for the drain. Returns 0, or -1 when the client is gone. */
int up_rb_pool_wait_drain(up_rb_server_t *srv, up_exchange_t *ex);
/* Runs f(arg) as the loop's owner and without the GVL (f must not touch Ruby), if no other
 * thread has the loop now; returns whether it ran. The caller holds the GVL. Only with
 * trylock: a thread that holds the GVL must never wait for a loop owner. */
int up_rb_with_loop(up_rb_server_t *srv, void *(*f)(void *), void *arg);

/* Wakes the thread in Server#run (wake_main_thread: only it; pool_wake_main: the sleeping app
 * threads too, which then look at srv->finished). Any thread, and a signal handler for the
 * first. */
void up_rb_wake_main_thread(up_rb_server_t *srv);
void up_rb_pool_wake_main(up_rb_server_t *srv);

/* Moves the loop to its own native thread (on_thread 1) or to the app threads (0); the
 * switch completes on other threads: the loop's current owner gives it up after its turn, and
 * the new one takes it (thread_pool.c). Any thread. */
void up_rb_pool_place_loop(up_rb_server_t *srv, int on_thread);

/* Loop placement by measurement (placement.c): around each app call on an app thread, with
 * the GVL. begin decides whether to sample the call; end adds it to the window and, at the
 * window's end, may move the loop. */
void up_rb_placement_init(up_rb_placement_t *p);
void up_rb_placement_begin(up_rb_server_t *srv, up_rb_call_sample_t *s);
void up_rb_placement_end(up_rb_server_t *srv, const up_rb_call_sample_t *s);
/* Server#stats' part: loop_mode, loop_switches, app_cpu_share. With the GVL. */
void up_rb_placement_add_stats(up_rb_server_t *srv, VALUE h);

/* The watchdog (watchdog.c): a native thread that promotes another app thread to run the loop
 * and take queued requests when those running have been stuck in the app for a while. */
void up_rb_watchdog_start(up_rb_server_t *srv);
void up_rb_watchdog_stop(up_rb_server_t *srv);

/* A line in the access log (engine/http1/access_log.h) for the exchange ex, which the thread
 * that ran it began at started_ns, and its count in the metrics; each only when on. */
void up_rb_access_log_request(up_rb_server_t *srv, up_exchange_t *ex, uint64_t started_ns);
/* Whether a request's start time is wanted (access log or metrics). */
#define up_rb_times_requests(srv) ((srv)->access_log.fd >= 0 || (srv)->metrics.enabled)
/* Server#stats' part from the metrics (metrics.c). */
void up_rb_metrics_add_stats(const up_rb_metrics_t *m, VALUE h);

/* The engine's static file handler from Server.new's static: Hash (static.c); raises
 * ArgumentError. on_served is the engine's callback for the requests it answers. */
struct up_static_t *up_rb_static_new(VALUE config);
void up_rb_on_served(up_exchange_t *ex, void *user);

void up_rb_init_turn(void);
void up_rb_init_server(VALUE mUp);
up_rb_server_t *up_rb_server_get(VALUE self);

/* ---- rack.hijack and the 101 + callable body (hijack.c) ---- */
void up_rb_init_hijack(VALUE mUp);
/* env["rack.hijack"] for ex's request, told its env once built; detach: the request
 * is over (a later call raises). */
VALUE up_rb_hijack_new(up_rb_server_t *srv, up_exchange_t *ex);
void up_rb_hijack_set_env(VALUE hijack, VALUE env);
void up_rb_hijack_detach(VALUE hijack);
/* After the app's call: if it took the socket (full hijack), or its response hands the
 * connection to a callable (a partial hijack, or 101 with a callable body), does what is left
 * (the head, the hand-over, the call), closes the body, sets the outs (*error_out only on an
 * error) and returns 1; else 0 and the response is written as usual. */
int up_rb_hijack_respond(up_rb_server_t *srv, up_exchange_t *ex, VALUE hijack, VALUE response,
                         VALUE env, VALUE *status_out, VALUE *headers_out, VALUE *error_out);
/* ---- end of hijack.c ---- */

/* WebSocket and SSE clients (client.c). */
void up_rb_init_client(VALUE mUp);
/* Up::TLSContext (tls_object.c): the engine context of an object, raising TypeError for
 * anything else. */
void up_rb_init_tls(VALUE mUp);
struct up_tls_context_t *up_rb_tls_context_get(VALUE obj);
/* After the app's call: if it took the upgrade its request asked for (env["rack.upgrade"] and a
 * status below 300), answers it (101, or an event stream's head), calls the body's close and
 * returns 1; else 0 and the response is the app's to write. */
int up_rb_upgrade(up_rb_server_t *srv, up_exchange_t *ex, VALUE env, VALUE response);
/* Where the app threads' queue links a client (thread_pool.c); under queue_lock. */
up_rb_job_t *up_rb_client_job_link(struct up_rb_client_t *client);
/* Runs a client's waiting callbacks (an app thread, with the GVL). */
void up_rb_client_run(up_rb_server_t *srv, struct up_rb_client_t *client);
/* Marks every client; under the GC, on any thread holding the GVL. */
void up_rb_clients_mark(up_rb_server_t *srv);
/* Once no app thread runs: runs the callbacks still waiting (on_close included), on the
 * calling thread. */
void up_rb_clients_drain(up_rb_server_t *srv);
/* The server's memory goes: every client forgets it (their methods then answer "closed"). */
void up_rb_clients_detach(up_rb_server_t *srv);

#endif
