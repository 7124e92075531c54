#ifndef UP_RUBY_BINDING_H
#define UP_RUBY_BINDING_H

/* What the files of the MRI binding share. The binding only translates: engine slices become
 * the Rack env, the app is called, and its response is walked back into up_response_* calls.
 * No sockets and no parsing here. */

#include <ruby.h>
#include <ruby/thread.h>
#include <pthread.h>
#include "conn.h"
#include "loop.h"
#include "response.h"
#include "server.h"

/* One Up::Server: an engine server, its loop, the app and the threads that call it. */
typedef struct up_rb_server_t {
    VALUE self;
    VALUE app;
    VALUE env_template; /* the constant part of every env, dup'ed per request */
    VALUE empty_input;  /* rack.input of every request without a body (it is stateless) */
    VALUE threads;      /* Array of the app threads, or nil in inline mode */
    up_loop_t *loop;
    up_server_t *server;
    up_server_config_t config;
    int num_threads;        /* 0: the app runs inline on the loop thread */
    unsigned shutdown_timeout_ms;
    int running;
    volatile int stop_requested; /* set from any thread or a trap handler, then a wake */
    /* With app threads the loop runs without the GVL (only C touches sockets and parsing), so
     * Ruby on the app threads and I/O on the loop thread use two cores at once. */
    int loop_without_gvl;           /* set and read by the loop thread only */
    volatile int loop_interrupted;  /* set by Ruby's unblock function, then a wake */
    /* Requests waiting for an app thread; linked through conn->user. */
    pthread_mutex_t queue_lock;
    pthread_cond_t queue_cond;
    up_conn_t *queue_head, *queue_tail;
    int queue_closed;
    int queue_sleepers; /* app threads waiting on queue_cond */
    /* Requests of the current loop iteration, queued in one go by up_rb_pool_publish so that
     * a burst costs one lock and at most one wake-up instead of one per request. Loop thread
     * only. */
    up_conn_t *batch_head, *batch_tail;
} up_rb_server_t;

/* Frozen, GC-registered Strings and IDs made once at load time (env.c). */
extern VALUE up_rb_key_request_method, up_rb_key_rack_input, up_rb_key_response_finished,
    up_rb_key_rack_early_hints;

void up_rb_init_env(VALUE mUp);
VALUE up_rb_env_template(up_rb_server_t *srv);
/* The env of the request conn holds. */
VALUE up_rb_env_build(up_rb_server_t *srv, up_conn_t *conn);

void up_rb_init_input(VALUE mUp);
/* rack.input over the request body; detach makes it read as closed once the request is over,
 * since the bytes it points at belong to the connection. */
VALUE up_rb_input_new(const up_request_body_t *body);
VALUE up_rb_input_empty(void);
void up_rb_input_detach(VALUE input);

void up_rb_init_early_hints(VALUE mUp);
VALUE up_rb_early_hints_new(up_conn_t *conn);
void up_rb_early_hints_detach(VALUE hints);

void up_rb_init_stream(VALUE mUp);
void up_rb_init_body(VALUE mUp);
void up_rb_init_request_handler(VALUE mUp);
/* The stream handed to a streaming body's call; closed? tells the body walker it is done. */
VALUE up_rb_stream_new(up_conn_t *conn, VALUE input);
int up_rb_stream_closed(VALUE stream);
void up_rb_stream_detach(VALUE stream);

/* Calls the app for the request conn holds and queues its response; never raises. */
void up_rb_handle_request(up_rb_server_t *srv, up_conn_t *conn);

/* Writes a validated response (body.c). Returns nil, or the exception that broke it. Sets
 * *status_out and *headers_out for rack.response_finished. */
VALUE up_rb_write_response(up_rb_server_t *srv, up_conn_t *conn, VALUE env, VALUE response,
                           VALUE *status_out, VALUE *headers_out);

/* Adds a Rack headers Hash to the response being started: "rack." keys are skipped, Array
 * values and "\n"-joined Rack 2 values become one field line each. Returns 0, or -1 with a
 * message saying what was invalid. */
int up_rb_add_headers(up_conn_t *conn, VALUE headers, VALUE *message);

/* Flushes conn without the GVL (it may wait for a slow client). Returns 0 or -1 (gone). */
int up_rb_flush(up_conn_t *conn);

/* Logs an exception through Up::Server#report_exception (lib/up/server.rb). */
void up_rb_report(up_rb_server_t *srv, VALUE error, VALUE env);

/* push collects a request (loop thread); publish hands the collected ones to the app threads
 * once the loop iteration's events are dispatched. */
void up_rb_pool_push(up_rb_server_t *srv, up_conn_t *conn);
void up_rb_pool_publish(up_rb_server_t *srv);
void up_rb_pool_start(up_rb_server_t *srv);
void up_rb_pool_stop(up_rb_server_t *srv, double timeout);

void up_rb_init_server(VALUE mUp);

#endif
