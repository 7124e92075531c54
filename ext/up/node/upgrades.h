#ifndef UP_NODE_UPGRADES_H
#define UP_NODE_UPGRADES_H

/* WebSockets, event streams and pub/sub on `up` (docs/websockets.md): the engine's
 * (websocket.h, sse.h, pubsub.h) handed to JavaScript (node/up/websocket.js, pubsub.js), which
 * gives them to the Ruby side up_node shares (opal/up/node/client.rb, subscription.rb).
 *
 * websocket.c: the upgrade of a lent request, the upgraded connections ("clients", named to
 * JavaScript by tokens as exchanges are: a slot index and a generation), and the engine's
 * events for them. pubsub.c: subscribing and publishing.
 *
 * The engine's events for the clients and the block subscriptions reach JavaScript through
 * the event queue (event_queue.h), never where the engine reports them.
 *
 * Everything runs on the loop thread (Node's main thread), like the rest of the addon. */

#include <uv.h>
#include "addon.h"
#include "event_queue.h"
#include "pubsub/pubsub.h"
#include "sse/sse.h"
#include "websocket/websocket.h"

/* Clients at once, at most (the slot index takes the token's low bits). */
#define UP_NODE_CLIENT_BITS 22
#define UP_NODE_MAX_CLIENTS (1u << UP_NODE_CLIENT_BITS)

typedef struct up_node_client_t {
    up_conn_t *conn;          /* referenced until its close event ran; NULL when free */
    uint32_t generation;
    uint32_t next_free;
    up_upgrade_kind_t kind;
} up_node_client_t;

/* A subscription's record in the engine (pubsub.c). */
typedef struct up_node_sub_t up_node_sub_t;

struct up_node_upgrades_t {
    up_node_server_t *srv;
    up_ws_settings_t ws;
    unsigned sse_heartbeat_ms;
    up_pubsub_t *pubsub;
    up_node_sub_t *subs;               /* the records of the subscriptions pubsub holds */
    up_node_client_t *clients;
    uint32_t num_clients, free_client; /* free_client == num_clients: none free */
    up_node_event_queue_t queue;       /* the clients' events and the block subscriptions' */
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
/* Runs the queued events now (up_node_event_queue_run): exchange.c does before a request goes
 * to JavaScript, so that the app sees what happened before it in the order it happened (a
 * client's close before a request that came after it). */
void up_node_run_events(up_node_upgrades_t *u);
up_node_upgrades_t *up_node_upgrades_of(napi_env env);
/* pubsub.c: the pub/sub functions of the module. */
napi_status up_node_define_pubsub(napi_env env, napi_value exports);
extern const up_pubsub_callbacks_t up_node_pubsub_callbacks;
/* pubsub.c: frees the records of the subscriptions the engine held, once up_pubsub_free let
 * go of them (the environment goes away; JavaScript's externals for them are dead). */
void up_node_pubsub_free_users(up_node_upgrades_t *u);

#endif
