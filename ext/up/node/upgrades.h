#ifndef UP_NODE_UPGRADES_H
#define UP_NODE_UPGRADES_H

/* WebSockets, event streams and pub/sub on `up` (reference/websocket-pubsub.md): the engine's
 * (websocket.h, sse.h, pubsub.h) handed to JavaScript (node/up/websocket.js, pubsub.js), which
 * gives them to the Ruby side up_node shares (opal/up/node/client.rb, subscription.rb).
 *
 * websocket.c: the upgrade of a lent request, the upgraded connections ("clients", named to
 * JavaScript by tokens as exchanges are: a slot index and a generation), and the engine's
 * events for them. pubsub.c: subscribing and publishing.
 *
 * Events. The engine reports a client's events (upgrade.h) and the messages of block
 * subscriptions (pubsub.h) inside its own work, sometimes under the pub/sub registry's lock
 * or while it writes a connection; JavaScript may answer any of them by subscribing, writing
 * or closing. So they are not handed over there: each is queued (the message as the engine
 * made it, never copied), and the queue is run at the next safe point of Node's loop, a
 * uv_prepare (before the loop waits) or a uv_check (right after it), whichever comes first.
 * That is the same turn of the loop as the event; each runs JavaScript's onEvent once, with
 * the message made a JS string straight from the engine's bytes.
 *
 * Everything runs on the loop thread (Node's main thread), like the rest of the addon. */

#include <uv.h>
#include "addon.h"
#include "pubsub.h"
#include "sse.h"
#include "websocket.h"

/* The kinds JavaScript's onEvent(kind, id, data, channel) gets: id is a client's slot index for
 * the first six, a subscription's id (pubsub.js) for the last two. */
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

/* Clients at once, at most (the slot index takes the token's low bits). */
#define UP_NODE_CLIENT_BITS 22
#define UP_NODE_MAX_CLIENTS (1u << UP_NODE_CLIENT_BITS)

typedef struct up_node_client_t {
    up_conn_t *conn;          /* referenced until its close event ran; NULL when free */
    uint32_t generation;
    uint32_t next_free;
    up_upgrade_kind_t kind;
} up_node_client_t;

/* A queued event (see above): a client's, or a block subscription's message. */
typedef struct up_node_event_t {
    int kind;
    uint32_t id;
    unsigned code;
    up_upgrade_message_t *msg; /* TEXT and BINARY: owned */
    up_shared_t *message;      /* PUBSUB_*: retained */
    char *channel;             /* PUBSUB_*: owned */
    size_t channel_len;
} up_node_event_t;

struct up_node_upgrades_t {
    up_node_server_t *srv;
    up_ws_settings_t ws;
    unsigned sse_heartbeat_ms;
    up_pubsub_t *pubsub;
    napi_ref on_event;
    up_node_client_t *clients;
    uint32_t num_clients, free_client; /* free_client == num_clients: none free */
    up_node_event_t *events;           /* the queue: run from `head` up to `len` */
    size_t head, len, cap;
    int running;                       /* the queue is being run (an event may queue more) */
    uv_prepare_t *prepare;             /* both run the queue; started while it holds events */
    uv_check_t *check;
    up_node_scratch_t scratch;         /* strings JavaScript hands over, copied out of V8 */
};

/* upgrades(options, onEvent): sets WebSockets, event streams and pub/sub up for the server
 * createServer made (options: max_msg, ws_ping_ms, ws_deflate, sse_heartbeat_ms,
 * ws_max_pending, as Up::Options checked them). Defined with the module's other functions. */
napi_status up_node_define_upgrades(napi_env env, napi_value exports);
/* The environment goes away: after the server and its loop are freed. */
void up_node_upgrades_free(up_node_upgrades_t *u);

/* websocket.c, for pubsub.c: the client a token names now, or NULL. */
up_node_client_t *up_node_client_of(up_node_upgrades_t *u, napi_env env, napi_value token);
/* Runs the queued events now: exchange.c does before a request goes to JavaScript, so that
 * the app sees what happened before it in the order it happened (a client's close before a
 * request that came after it). */
void up_node_run_events(up_node_upgrades_t *u);
/* Queues an event and makes sure the queue runs this turn of the loop. */
void up_node_queue_event(up_node_upgrades_t *u, const up_node_event_t *ev);
up_node_upgrades_t *up_node_upgrades_of(napi_env env);
/* pubsub.c: the pub/sub functions of the module. */
napi_status up_node_define_pubsub(napi_env env, napi_value exports);
extern const up_pubsub_callbacks_t up_node_pubsub_callbacks;

#endif
