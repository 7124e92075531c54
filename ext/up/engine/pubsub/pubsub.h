#ifndef UP_PUBSUB_H
#define UP_PUBSUB_H

/* Pub/sub inside one server (one worker): who is subscribed to what, and the fan-out of a
 * published message to every matching subscriber (docs/websockets.md).
 *
 * A subscription is to a channel, or to a pattern with the rules of Redis PSUBSCRIBE (*, ?,
 * [...], \ escapes). It delivers in one of two ways:
 *  - directly: the message is written to a WebSocket (a text or binary frame) or an event
 *    stream (a data event) by the loop, with no binding code at all. The frame is encoded once
 *    per message and variant, and every subscriber's output references the same bytes. A
 *    message that is not UTF-8 goes to text subscribers as a binary frame (a text frame would
 *    make the client fail the connection, RFC 6455 §8.1);
 *  - to the binding: on_message runs on the loop thread (a block subscription: the binding
 *    queues it for the client's callbacks, or for the server's global subscriptions).
 *
 * Threads. Subscribing and unsubscribing happen on any thread, under the registry's lock. A
 * publish from any thread is a task to the loop (core/context.h), which fans it out holding that
 * lock once for the whole message (never once per subscriber) and appends to each direct
 * subscriber's output, which only the loop touches; connections written to are flushed once
 * at the end of the loop's turn, so a burst of messages costs one write per subscriber. A
 * direct subscriber more than max_pending bytes behind is not written to any more: it gets a
 * Close with 1008 behind what it has (or its event stream ends) and a log line; the publisher
 * and the other subscribers never wait for it, and what it holds stays below the bound. */

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "core/conn.h"
#include "core/context.h"
#include "core/outq.h"

typedef struct up_pubsub_t up_pubsub_t;

typedef enum up_pubsub_delivery_t {
    UP_PUBSUB_WS_TEXT,   /* a WebSocket text frame */
    UP_PUBSUB_WS_BINARY, /* a WebSocket binary frame */
    UP_PUBSUB_SSE,       /* an event stream's data event */
    UP_PUBSUB_CALLBACK   /* the binding's on_message */
} up_pubsub_delivery_t;

/* The binding's side, all on the loop thread. */
typedef struct up_pubsub_callbacks_t {
    /* A message for a CALLBACK subscription; user is the subscription's. message is the
     * publish's bytes (retain it to keep it past the call), channel those of the channel it
     * was published to. */
    void (*on_message)(void *user, const char *channel, size_t channel_len, up_shared_t *message);
    /* A line for the log (a slow subscriber closed). */
    void (*on_log)(void *data, const char *message);
    void *data;
} up_pubsub_callbacks_t;

/* Counters for stats; read with up_pubsub_any_stats. */
typedef struct up_pubsub_stats_t {
    uint64_t subscriptions; /* now */
    uint64_t published;     /* messages fanned out here */
    uint64_t delivered;     /* deliveries made (one per matching subscription) */
    uint64_t slow_closed;   /* subscribers closed for being max_pending behind */
} up_pubsub_stats_t;

/* One per server, made before it runs; max_pending 0: no bound. */
up_pubsub_t *up_pubsub_new(up_context_t *server, uint64_t max_pending,
                           const up_pubsub_callbacks_t *callbacks);
/* Once the loop is done with the server (after up_server_free's closes). */
void up_pubsub_free(up_pubsub_t *ps);

/* ---- any thread ---------------------------------------------------------------------------- */

/* Subscribes conn (a WebSocket or an event stream; NULL for a server-wide subscription, which
 * must deliver by CALLBACK) to channel or, is_pattern, to every channel the pattern matches. A
 * subscription of the same conn to the same (channel, is_pattern) is replaced: *replaced gets
 * its user (else NULL), for the binding to release. user goes to on_message. *first is set
 * when this is the server's first subscription to (channel, is_pattern): a cluster's engines
 * subscribe once per channel (first in, last out). Returns 0, or -1 when conn is closed
 * (nothing was subscribed). The binding ends a connection's subscriptions when it closes (it
 * knows them: a client's are few, the server's many). */
int up_pubsub_any_subscribe(up_pubsub_t *ps, up_conn_t *conn, const char *channel, size_t len,
                            int is_pattern, up_pubsub_delivery_t delivery, void *user,
                            void **replaced, int *first);
/* Ends conn's subscription to (channel, is_pattern); for conn NULL, the one whose user it is.
 * Returns the subscription's user (NULL when there was none) for the binding to release;
 * *last is set when it was the server's last to (channel, is_pattern). */
void *up_pubsub_any_unsubscribe(up_pubsub_t *ps, up_conn_t *conn, const char *channel,
                                size_t len, int is_pattern, void *user, int *last);
/* Publishes to this server's subscribers: fanned out by the loop's next turn. */
void up_pubsub_any_publish(up_pubsub_t *ps, const char *channel, size_t channel_len,
                           const char *message, size_t message_len);
void up_pubsub_any_stats(up_pubsub_t *ps, up_pubsub_stats_t *out);

/* ---- pure -------------------------------------------------------------------------------- */

/* Whether str matches the glob pattern, with Redis' rules: * any run, ? one byte, [abc] [^a]
 * [a-z] classes, \ escapes the next byte. Bytes, not characters. Bounded: a pattern's stars
 * cannot make it exponential. */
int up_glob_match(const char *pattern, size_t plen, const char *str, size_t slen);

#endif
