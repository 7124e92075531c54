#ifndef UP_NODE_EVENT_QUEUE_H
#define UP_NODE_EVENT_QUEUE_H

/* The queue that hands the engine's events for upgraded connections and block subscriptions
 * to JavaScript's onEvent(kind, id, data, channel) (node/up/websocket.js, pubsub.js).
 *
 * Why a queue. The engine reports these events inside its own work, sometimes under the
 * pub/sub registry's lock (its fan-out) or while it writes a connection, and JavaScript may
 * answer any of them by subscribing, writing or closing. So an event is never handed over
 * where it is reported: it is queued (a message as the engine made it, never copied), and the
 * queue runs at the next safe point of Node's loop, a uv_prepare (before the loop waits) or a
 * uv_check (right after it), whichever comes first: the same turn of the loop as the event.
 *
 * A run is one batch: every queued event in order, and those queued while it runs, all inside
 * one callback scope, so Node's microtasks and nextTick queue run once when the batch is done
 * (after each event, they would cost a turn of their own per message). A message becomes a
 * JS string straight from the engine's bytes.
 *
 * Everything here runs on the loop thread (Node's main thread), like the rest of the addon,
 * never inside JavaScript's own call into the addon for the batch it is running. */

#include <uv.h>
#include "addon.h"
#include "http1/upgrade.h"

/* The kinds onEvent gets: id is a client's slot index for the first six, a subscription's id
 * (pubsub.js) for the last two. */
enum {
    UP_NODE_EV_OPEN,           /* the connection speaks its new protocol */
    UP_NODE_EV_TEXT,           /* data: a whole text message */
    UP_NODE_EV_BINARY,         /* data: a whole binary message, one char a byte */
    UP_NODE_EV_DRAINED,        /* the output emptied after pending was seen above 0 */
    UP_NODE_EV_SHUTDOWN,       /* a graceful stop: the app says goodbye, then it closes */
    UP_NODE_EV_CLOSE,          /* the last one; data: the close code (0 for an event stream) */
    UP_NODE_EV_PUBSUB_TEXT,    /* data: a published message that is UTF-8, channel its channel */
    UP_NODE_EV_PUBSUB_BINARY   /* the same for one that is not */
};

/* A queued event: a client's, or a block subscription's message. */
typedef struct up_node_event_t {
    int kind;
    uint32_t id;
    unsigned code;
    up_upgrade_message_t *msg; /* TEXT and BINARY: owned */
    up_shared_t *message;      /* PUBSUB_*: retained */
    char *channel;             /* PUBSUB_*: owned */
    size_t channel_len;
} up_node_event_t;

/* What the queue's owner does around a batch, outside JavaScript. */
typedef struct up_node_event_hooks_t {
    /* After an event went to JavaScript, before the queue frees it. */
    void (*after_event)(void *owner, const up_node_event_t *ev);
    /* After a batch, once its callback scope closed. */
    void (*after_batch)(void *owner);
    void *owner;
} up_node_event_hooks_t;

typedef struct up_node_event_queue_t {
    up_node_server_t *_srv;       /* its env, async context and log */
    napi_ref _on_event;
    up_node_event_hooks_t _hooks;
    up_node_event_t *_events;     /* run from _head up to _len */
    size_t _head, _len, _cap;
    int _running;                 /* a batch is running (an event may queue more) */
    uv_prepare_t *_prepare;       /* both run the queue; started while it holds events */
    uv_check_t *_check;
} up_node_event_queue_t;

/* Sets q up on the server's loop, to hand its events to on_event (a function, referenced
 * until up_node_event_queue_dispose). Its uv handles do not keep Node's loop alive. Returns 0,
 * or -1 when a reference cannot be made (q holds nothing then). Loop thread. */
int up_node_event_queue_init(up_node_event_queue_t *q, up_node_server_t *srv, uv_loop_t *uv,
                             napi_value on_event, const up_node_event_hooks_t *hooks);
/* Queues an event (q takes what it owns: msg, channel, a reference on message) and makes sure
 * the queue runs this turn of the loop. The engine's callbacks call it, anywhere in its work:
 * nothing runs here. Loop thread. */
void up_node_event_queue_push(up_node_event_queue_t *q, const up_node_event_t *ev);
/* Runs the queued events now, if any. For a point where JavaScript may run and the engine is
 * not mid-work (exchange.c, before a request goes to JavaScript, so that the app sees what
 * happened before it in the order it happened). Does nothing inside a running batch. Loop
 * thread. */
void up_node_event_queue_run(up_node_event_queue_t *q);
/* The environment goes away: events still queued are dropped (never run), the handles close
 * (freed by their close callbacks) and the reference goes. Loop thread. */
void up_node_event_queue_dispose(up_node_event_queue_t *q);

#endif
