#ifndef UP_RUBY_CLIENT_H
#define UP_RUBY_CLIENT_H

/* What client.c (Up::Client and the order of its callbacks) and subscription.c (pub/sub on
 * clients and on the server) share. */

#include "binding.h"
#include "pubsub/pubsub.h"

typedef enum event_kind_t {
    EV_OPEN,
    EV_MESSAGE,
    EV_DRAINED,
    EV_SHUTDOWN,
    EV_CLOSE,
    EV_PUBSUB /* a message for a subscription with a block */
} event_kind_t;

struct up_rb_sub_t;

typedef struct event_t {
    struct event_t *next;
    event_kind_t kind;
    unsigned code;
    up_upgrade_message_t *msg;
    /* EV_PUBSUB: the subscription (marked while the event waits), its channel's bytes and the
     * message, referenced. */
    struct up_rb_sub_t *sub;
    char *channel;
    size_t channel_len;
    up_shared_t *message;
} event_t;

typedef struct up_rb_client_t {
    up_rb_server_t *srv; /* NULL once the server is gone */
    up_conn_t *conn;     /* referenced until on_close ran, then NULL */
    VALUE self, env, handler;
    up_upgrade_kind_t protocol; /* UP_UPGRADE_NONE: the server's own, for Up.subscribe */
    VALUE subscriptions; /* [channel, is_pattern] => Up::Subscription; nil until the first */
    /* Under srv->queue_lock: events not run yet, and whether the client is queued or being
     * run (then whoever runs it takes new events too). */
    event_t *events, *events_tail;
    int scheduled;
    up_rb_job_t job_next; /* the app threads' queue (thread_pool.c) */
    /* GVL. */
    int closed;        /* on_close ran */
    int closing;       /* close was called: writes are refused */
    int in_callback;   /* an app thread runs its callbacks now (handler= from one of them) */
    struct up_rb_client_t *prev, *next; /* srv->clients */
} up_rb_client_t;

/* A subscription with a block, or a client's direct one (block nil): Up::Subscription. */
typedef struct up_rb_sub_t {
    VALUE self, block, channel;
    int is_pattern;
    up_rb_client_t *client; /* whose callbacks run its block */
    int active;             /* in the engine's registry */
} up_rb_sub_t;

/* client.c */
up_rb_client_t *up_rb_client_get(VALUE self);
/* Queues an event for the client's callbacks (the loop thread, or any thread holding no lock). */
void up_rb_client_push(up_rb_client_t *c, event_t *ev);
/* A client with no connection that runs the server's own subscriptions' blocks (Up.subscribe). */
up_rb_client_t *up_rb_server_client(up_rb_server_t *srv);
void up_rb_event_free(event_t *ev);

/* subscription.c */
void up_rb_init_subscription(VALUE mUp, VALUE cClient);
/* The engine's pub/sub callbacks (pubsub.h), for up_pubsub_new. */
extern const up_pubsub_callbacks_t up_rb_pubsub_callbacks;
/* Runs an EV_PUBSUB event: the block, with channel and message. GVL. */
void up_rb_sub_run(up_rb_client_t *c, event_t *ev);
/* Ends every subscription of a client that closed. GVL. */
void up_rb_client_unsubscribe_all(up_rb_client_t *c);
void up_rb_sub_mark_event(const event_t *ev);

#endif
