/* The engine's events for JavaScript, queued and run in batches; see event_queue.h. */

#include "event_queue.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/memory.h"

/* The queue's room is kept between turns up to this many events. */
#define EVENTS_KEEP 1024

static void run_queue(up_node_event_queue_t *q);

static void queue_on_prepare(uv_prepare_t *h)
{
    run_queue(h->data);
}

static void queue_on_check(uv_check_t *h)
{
    run_queue(h->data);
}

static void handle_on_closed(uv_handle_t *h)
{
    free(h);
}

int up_node_event_queue_init(up_node_event_queue_t *q, up_node_server_t *srv, uv_loop_t *uv,
                             napi_value on_event, const up_node_event_hooks_t *hooks)
{
    memset(q, 0, sizeof(*q));
    if (napi_create_reference(srv->env, on_event, 1, &q->_on_event) != napi_ok)
        return -1;
    q->_srv = srv;
    q->_hooks = *hooks;
    q->_prepare = up_malloc(sizeof(*q->_prepare));
    q->_check = up_malloc(sizeof(*q->_check));
    uv_prepare_init(uv, q->_prepare);
    uv_check_init(uv, q->_check);
    q->_prepare->data = q->_check->data = q;
    /* Housekeeping: the sockets keep Node's loop alive, not these. */
    uv_unref((uv_handle_t *)q->_prepare);
    uv_unref((uv_handle_t *)q->_check);
    return 0;
}

void up_node_event_queue_push(up_node_event_queue_t *q, const up_node_event_t *ev)
{
    if (q->_len == q->_cap) {
        if (q->_head > 0 && !q->_running) {
            memmove(q->_events, q->_events + q->_head, (q->_len - q->_head) * sizeof(*q->_events));
            q->_len -= q->_head;
            q->_head = 0;
        }
        if (q->_len == q->_cap) {
            q->_cap = q->_cap == 0 ? 64 : q->_cap * 2;
            q->_events = up_realloc(q->_events, q->_cap * sizeof(*q->_events));
        }
    }
    q->_events[q->_len++] = *ev;
    if (q->_len - q->_head == 1 && !q->_running) {
        uv_prepare_start(q->_prepare, queue_on_prepare);
        uv_check_start(q->_check, queue_on_check);
    }
}

void up_node_event_queue_run(up_node_event_queue_t *q)
{
    if (q->_head < q->_len)
        run_queue(q);
}

static void free_event(up_node_event_t *ev)
{
    free(ev->msg);
    free(ev->channel);
    if (ev->message != NULL)
        up_shared_release(ev->message);
}

void up_node_event_queue_dispose(up_node_event_queue_t *q)
{
    for (size_t i = q->_head; i < q->_len; i++)
        free_event(&q->_events[i]);
    free(q->_events);
    uv_close((uv_handle_t *)q->_prepare, handle_on_closed);
    uv_close((uv_handle_t *)q->_check, handle_on_closed);
    napi_delete_reference(q->_srv->env, q->_on_event);
}

/* A thrown value that escaped JavaScript's dispatcher (a bug of ours): logged. */
static void log_escaped(up_node_event_queue_t *q)
{
    napi_env env = q->_srv->env;
    napi_value error, text;
    char line[1024];
    size_t n = 0;
    int at = snprintf(line, sizeof(line), "error in up's upgrade events: ");
    napi_get_and_clear_last_exception(env, &error);
    if (napi_coerce_to_string(env, error, &text) != napi_ok ||
        napi_get_value_string_utf8(env, text, line + at, sizeof(line) - (size_t)at, &n) != napi_ok) {
        napi_value ignored;
        napi_get_and_clear_last_exception(env, &ignored);
        snprintf(line + at, sizeof(line) - (size_t)at, "(a value that cannot be shown)");
    }
    up_node_log(q->_srv, line);
}

/* Hands one event to JavaScript: onEvent(kind, id, data, channel). Inside run_queue's callback
 * scope. */
static void dispatch(up_node_event_queue_t *q, up_node_event_t *ev, napi_value fn, napi_value recv)
{
    napi_env env = q->_srv->env;
    napi_handle_scope scope;
    napi_open_handle_scope(env, &scope);
    napi_value argv[4], result;
    size_t argc = 3;
    napi_create_int32(env, ev->kind, &argv[0]);
    napi_create_uint32(env, ev->id, &argv[1]);
    switch (ev->kind) {
    case UP_NODE_EV_TEXT:
        napi_create_string_utf8(env, ev->msg->data, ev->msg->len, &argv[2]);
        break;
    case UP_NODE_EV_BINARY:
        napi_create_string_latin1(env, ev->msg->data, ev->msg->len, &argv[2]);
        break;
    case UP_NODE_EV_PUBSUB_TEXT:
        napi_create_string_utf8(env, ev->message->base, ev->message->len, &argv[2]);
        break;
    case UP_NODE_EV_PUBSUB_BINARY:
        napi_create_string_latin1(env, ev->message->base, ev->message->len, &argv[2]);
        break;
    default:
        napi_create_uint32(env, ev->code, &argv[2]);
    }
    if (ev->kind == UP_NODE_EV_PUBSUB_TEXT || ev->kind == UP_NODE_EV_PUBSUB_BINARY) {
        napi_create_string_utf8(env, ev->channel, ev->channel_len, &argv[3]);
        argc = 4;
    }
    if (napi_call_function(env, recv, fn, argc, argv, &result) != napi_ok)
        log_escaped(q);
    napi_close_handle_scope(env, scope);
}

/* Runs every queued event in order, and those queued meanwhile, in one callback scope (as one
 * napi_make_callback would hold one); then the owner's after_batch. */
static void run_queue(up_node_event_queue_t *q)
{
    if (q->_running)
        return;
    q->_running = 1;
    napi_env env = q->_srv->env;
    napi_handle_scope handles;
    napi_callback_scope scope;
    napi_value fn, recv;
    napi_open_handle_scope(env, &handles);
    napi_get_reference_value(env, q->_on_event, &fn);
    napi_get_global(env, &recv);
    napi_open_callback_scope(env, recv, q->_srv->async, &scope);
    while (q->_head < q->_len) {
        up_node_event_t ev = q->_events[q->_head++];
        dispatch(q, &ev, fn, recv);
        q->_hooks.after_event(q->_hooks.owner, &ev);
        free_event(&ev);
    }
    napi_close_callback_scope(env, scope);
    napi_close_handle_scope(env, handles);
    q->_head = q->_len = 0;
    if (q->_cap > EVENTS_KEEP) {
        free(q->_events);
        q->_events = NULL;
        q->_cap = 0;
    }
    q->_running = 0;
    uv_prepare_stop(q->_prepare);
    uv_check_stop(q->_check);
    q->_hooks.after_batch(q->_hooks.owner);
}
