/* WebSockets and event streams on `up`: the upgrade of a lent request, the clients it makes,
 * the calls JavaScript makes on them, and what the event queue (event_queue.h) does for
 * them around each event. See upgrades.h. */

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "fields.h"
#include "base/memory.h"
#include "http1/response.h"
#include "upgrades.h"
#include "base/utf8.h"

/* Strings at least this long are sent by reference: copied out of V8 once, into memory the
 * output queue shares, rather than once more into its buffers. */
#define SHARE_MIN (32 * 1024)

static napi_value throw_error(napi_env env, const char *message)
{
    napi_throw_error(env, NULL, message);
    return NULL;
}

up_node_upgrades_t *up_node_upgrades_of(napi_env env)
{
    up_node_server_t *srv = up_node_server_of(env);
    return srv == NULL ? NULL : srv->upgrades;
}

/* ---------------------------------------------------------------- clients */

/* Returns a new client's slot index, or -1 when UP_NODE_MAX_CLIENTS are open. */
static int64_t take_client(up_node_upgrades_t *u)
{
    if (u->free_client == u->num_clients) {
        if (u->num_clients == UP_NODE_MAX_CLIENTS)
            return -1;
        uint32_t grown = u->num_clients == 0 ? 64 : u->num_clients * 2;
        u->clients = up_realloc(u->clients, grown * sizeof(*u->clients));
        for (uint32_t i = u->num_clients; i < grown; i++)
            u->clients[i] = (up_node_client_t){.next_free = i + 1};
        u->free_client = u->num_clients;
        u->num_clients = grown;
    }
    uint32_t i = u->free_client;
    u->free_client = u->clients[i].next_free;
    return i;
}

/* The client's close event ran: its slot goes back, and a token naming it is stale. */
static void release_client(up_node_upgrades_t *u, uint32_t i)
{
    up_node_client_t *c = &u->clients[i];
    if (c->conn != NULL)
        up_conn_release(c->conn);
    c->conn = NULL;
    c->generation = (c->generation + 1) & ((1u << (32 - UP_NODE_CLIENT_BITS)) - 1);
    c->next_free = u->free_client;
    u->free_client = i;
}

static uint32_t token_of(up_node_upgrades_t *u, uint32_t i)
{
    return i | (u->clients[i].generation << UP_NODE_CLIENT_BITS);
}

up_node_client_t *up_node_client_of(up_node_upgrades_t *u, napi_env env, napi_value token)
{
    uint32_t t;
    if (u == NULL || napi_get_value_uint32(env, token, &t) != napi_ok)
        return NULL;
    uint32_t i = t & (UP_NODE_MAX_CLIENTS - 1);
    if (i >= u->num_clients || u->clients[i].conn == NULL ||
        u->clients[i].generation != t >> UP_NODE_CLIENT_BITS)
        return NULL;
    return &u->clients[i];
}

/* ---------------------------------------------------------------- the event queue's hooks */

void up_node_run_events(up_node_upgrades_t *u)
{
    up_node_event_queue_run(&u->queue);
}

/* An event went to JavaScript: a message's bytes are consumed (the connection reads on), and
 * after a close event the client's slot goes back. */
static void after_event(void *owner, const up_node_event_t *ev)
{
    up_node_upgrades_t *u = owner;
    if ((ev->kind == UP_NODE_EV_TEXT || ev->kind == UP_NODE_EV_BINARY) &&
        u->clients[ev->id].conn != NULL)
        up_ws_any_consumed(u->clients[ev->id].conn, ev->msg->len);
    if (ev->kind == UP_NODE_EV_CLOSE)
        release_client(u, ev->id);
}

static void after_batch(void *owner)
{
    up_node_upgrades_t *u = owner;
    up_node_scratch_trim(&u->scratch);
    /* What JavaScript wrote goes out now, not at the loop's next wake-up (the wake-up its
     * writes asked for finds nothing left then): no JavaScript is running, so this is the
     * engine's wake-up work at a point where the loop could have run it. */
    up_context_t *server = u->srv->server;
    up_conn_loop_take_mail(server);
    up_conn_loop_run_deferred(server);
}

/* ---------------------------------------------------------------- the engine's events */

static up_node_upgrades_t *upgrades_of_conn(up_conn_t *conn)
{
    return ((up_node_server_t *)conn->server->handler.user)->upgrades;
}

static void queue_client_event(up_conn_t *conn, void *user, int kind, unsigned code,
                               up_upgrade_message_t *msg)
{
    up_node_event_t ev = {.kind = kind, .id = (uint32_t)(uintptr_t)user, .code = code, .msg = msg};
    up_node_event_queue_push(&upgrades_of_conn(conn)->queue, &ev);
}

static void client_on_open(up_conn_t *conn, void *user)
{
    queue_client_event(conn, user, UP_NODE_EV_OPEN, 0, NULL);
}

static void client_on_message(up_conn_t *conn, void *user, up_upgrade_message_t *msg)
{
    queue_client_event(conn, user, msg->binary ? UP_NODE_EV_BINARY : UP_NODE_EV_TEXT, 0, msg);
}

static void client_on_drained(up_conn_t *conn, void *user)
{
    queue_client_event(conn, user, UP_NODE_EV_DRAINED, 0, NULL);
}

static void client_on_shutdown(up_conn_t *conn, void *user)
{
    queue_client_event(conn, user, UP_NODE_EV_SHUTDOWN, 0, NULL);
}

static void client_on_close(up_conn_t *conn, void *user, unsigned code)
{
    queue_client_event(conn, user, UP_NODE_EV_CLOSE, code, NULL);
}

static const up_upgrade_events_t client_events = {client_on_open, client_on_message,
                                                  client_on_drained, client_on_shutdown,
                                                  client_on_close};

/* ---------------------------------------------------------------- the upgrade */

/* Fields of the app's that the upgrade's own head replaces (as up_ruby's, client.c). */
static const char *const ws_owned[] = {"content-type", "content-length", "transfer-encoding",
                                       "connection", "upgrade", "sec-websocket-accept",
                                       "sec-websocket-extensions", NULL};
static const char *const sse_owned[] = {"content-type", "content-length", "transfer-encoding",
                                        "connection", "cache-control", NULL};
static const char protocol_field[] = "sec-websocket-protocol";

static int named(const char *name, size_t len, const char *wanted)
{
    return strlen(wanted) == len && strncasecmp(name, wanted, len) == 0;
}

static int owned(const char *name, size_t len, const char *const *list, int protocol_too)
{
    if (protocol_too && named(name, len, protocol_field))
        return 1;
    for (const char *const *p = list; *p != NULL; p++) {
        if (named(name, len, *p))
            return 1;
    }
    return 0;
}

/* Whether the request offered the subprotocol chosen (RFC 6455 §4.2.2: the server picks only
 * among the client's; a client fails the connection otherwise). */
static int offered(up_exchange_t *ex, const char *chosen, size_t len)
{
    const up_http1_request_t *head = &ex->req->head;
    for (size_t i = 0; i < head->num_headers; i++) {
        const up_http1_header_t *h = &head->headers[i];
        if (named(h->name.base, h->name.len, protocol_field) &&
            up_ws_list_contains(h->value, chosen, len, 0))
            return 1;
    }
    return 0;
}

/* The app's subprotocol in the flat fields, if it chose one the client did not offer. */
static int unoffered_protocol(napi_env env, up_node_upgrades_t *u, up_exchange_t *ex,
                              napi_value fields, uint32_t n)
{
    for (uint32_t i = 0; i + 1 < n; i += 2) {
        napi_value name_v, value_v;
        const char *name, *value;
        size_t name_len, value_len;
        napi_get_element(env, fields, i, &name_v);
        if (up_node_scratch_bytes(env, &u->scratch, name_v, 0, 0, &name, &name_len) != 0 ||
            !named(name, name_len, protocol_field))
            continue;
        napi_get_element(env, fields, i + 1, &value_v);
        if (up_node_scratch_bytes(env, &u->scratch, value_v, 0, 0, &value, &value_len) == 0)
            return !offered(ex, value, value_len);
    }
    return 0;
}

/* The fields an upgrade leaves out of the app's (up_node_fields_skip_t). */
typedef struct owned_t {
    const char *const *list;
    int protocol_too; /* and the subprotocol: one the client did not offer */
} owned_t;

static int skip_owned(const char *name, size_t len, void *arg)
{
    const owned_t *o = arg;
    return owned(name, len, o->list, o->protocol_too);
}

static napi_value string_value(napi_env env, const char *s)
{
    napi_value v;
    napi_create_string_utf8(env, s, NAPI_AUTO_LENGTH, &v);
    return v;
}

/* upgrade(exchangeToken, fields): the app took the upgrade the request asked for, with these
 * response fields (flat [name, value, ...]). Sends the 101 (WebSocket) or the stream's head,
 * ends the exchange and returns the client's token; its open event follows once the
 * connection speaks the new protocol, before which nothing may be written. Returns what is
 * wrong as a String instead (nothing was sent: the caller fails the exchange). */
static napi_value upgrade(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2], result;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_upgrades_t *u = up_node_upgrades_of(env);
    if (u == NULL)
        return throw_error(env, "upgrade: call upgrades() first");
    up_node_slot_t *slot = argc == 2 ? up_node_exchange_slot(env, u->srv, argv[0]) : NULL;
    if (slot == NULL)
        return NULL;
    up_exchange_t *ex = slot->ex;
    up_upgrade_kind_t kind = ex->req->upgrade;
    uint32_t n = 0;
    if (kind == UP_UPGRADE_NONE)
        return string_value(env, "the request asked for no upgrade");
    if (napi_get_array_length(env, argv[1], &n) != napi_ok)
        return string_value(env, "header fields must be an Array");
    int64_t i = take_client(u);
    if (i < 0)
        return string_value(env, "too many upgraded connections");
    up_ws_t *ws = NULL;
    up_conn_t *conn = NULL;
    int protocol_too = 0;
    if (kind == UP_UPGRADE_WEBSOCKET) {
        protocol_too = unoffered_protocol(env, u, ex, argv[1], n);
        if (protocol_too)
            up_node_log(u->srv, "the app chose a WebSocket subprotocol the client did not offer; "
                                "it is left out of the 101 (RFC 6455 §4.2.2)");
        ws = up_ws_lent_start_accept(ex, &u->ws);
    } else {
        up_sse_lent_start_accept(ex);
    }
    owned_t skip = {kind == UP_UPGRADE_WEBSOCKET ? ws_owned : sse_owned, protocol_too};
    const char *err = up_node_fields_add(env, &u->scratch, ex, argv[1], n, skip_owned, &skip);
    up_node_scratch_trim(&u->scratch);
    void *user = (void *)(uintptr_t)i;
    if (err != NULL) {
        if (ws != NULL)
            up_ws_discard(ws);
        up_response_rollback(ex);
    } else if ((conn = kind == UP_UPGRADE_WEBSOCKET
                           ? up_ws_lent_accept(ex, ws, &client_events, user)
                           : up_sse_lent_accept(ex, u->sse_heartbeat_ms, &client_events,
                                                user)) == NULL) {
        err = "the upgrade cannot be written";
        up_response_rollback(ex);
    }
    if (err != NULL) {
        u->clients[i].next_free = u->free_client;
        u->free_client = (uint32_t)i;
        return string_value(env, err);
    }
    up_node_client_t *c = &u->clients[i];
    c->conn = conn; /* ex->conn, or its HTTP/2 stream's own: ours to release */
    c->kind = kind;
    up_node_exchange_finish(u->srv, slot);
    napi_create_uint32(env, token_of(u, (uint32_t)i), &result);
    return result;
}

/* ---------------------------------------------------------------- client calls */

static napi_value boolean(napi_env env, int b)
{
    napi_value v;
    napi_get_boolean(env, b, &v);
    return v;
}

static napi_value number(napi_env env, double d)
{
    napi_value v;
    napi_create_double(env, d, &v);
    return v;
}

static void shared_free(up_shared_t *shared)
{
    free(shared);
}

/* A WebSocket message of len bytes of v, copied once into memory the output queue shares. */
static int send_shared(napi_env env, up_conn_t *conn, int opcode, napi_value v, int utf8,
                       size_t len)
{
    up_shared_t *shared = up_malloc(sizeof(*shared) + len + 1);
    char *bytes = (char *)(shared + 1);
    size_t got = 0;
    if (utf8)
        napi_get_value_string_utf8(env, v, bytes, len + 1, &got);
    else
        napi_get_value_string_latin1(env, v, bytes, len + 1, &got);
    up_shared_init(shared, bytes, got, shared_free);
    int r = up_ws_any_send_shared(conn, opcode, shared, 0, got);
    up_shared_release(shared);
    return r;
}

/* wsSend(token, data, binary): one message, a String (UTF-8 text, or one char a byte when
 * binary) or a Buffer. The caller checked that text is well-formed. True when queued, false
 * once the connection is closed or closing. */
static napi_value ws_send(napi_env env, napi_callback_info info)
{
    size_t argc = 3;
    napi_value argv[3];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_upgrades_t *u = up_node_upgrades_of(env);
    up_node_client_t *c = argc == 3 ? up_node_client_of(u, env, argv[0]) : NULL;
    if (c == NULL || c->kind != UP_UPGRADE_WEBSOCKET)
        return boolean(env, 0);
    bool binary = false;
    napi_get_value_bool(env, argv[2], &binary);
    int opcode = binary ? UP_WS_OP_BINARY : UP_WS_OP_TEXT;
    napi_valuetype type;
    napi_typeof(env, argv[1], &type);
    size_t len = 0;
    const char *data;
    if (type == napi_string) {
        /* The length in UTF-16 units costs nothing; each is at most 3 bytes of UTF-8 (a pair
         * of them, 4), so a small message is copied out in one pass, without measuring it
         * first. */
        size_t units = 0;
        napi_get_value_string_utf16(env, argv[1], NULL, 0, &units);
        size_t most = binary ? units : units * 3;
        if (most >= SHARE_MIN) {
            if (binary)
                len = units;
            else
                napi_get_value_string_utf8(env, argv[1], NULL, 0, &len);
            if (len >= SHARE_MIN)
                return boolean(env, send_shared(env, c->conn, opcode, argv[1], !binary, len) == 0);
        }
        char *buf = up_node_scratch_reserve(&u->scratch, most + 1);
        if (binary)
            napi_get_value_string_latin1(env, argv[1], buf, most + 1, &len);
        else
            napi_get_value_string_utf8(env, argv[1], buf, most + 1, &len);
        data = buf;
    } else if (up_node_scratch_bytes(env, &u->scratch, argv[1], !binary, 0, &data, &len) != 0) {
        napi_throw_type_error(env, NULL, "a message must be a String or a Buffer");
        return NULL;
    }
    int r = up_ws_any_send(c->conn, opcode, data, len);
    up_node_scratch_trim(&u->scratch);
    return boolean(env, r == 0);
}

/* sseSend(token, data, utf8, event, id): one event; event and id are Strings or null. Returns
 * 0 when queued, -1 once the stream is closed or closing, -2 for a name or id with a line
 * break or NUL. */
static napi_value sse_send(napi_env env, napi_callback_info info)
{
    size_t argc = 5;
    napi_value argv[5];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_upgrades_t *u = up_node_upgrades_of(env);
    up_node_client_t *c = argc == 5 ? up_node_client_of(u, env, argv[0]) : NULL;
    if (c == NULL || c->kind != UP_UPGRADE_SSE)
        return number(env, -1);
    bool utf8 = true;
    napi_get_value_bool(env, argv[2], &utf8);
    const char *event = NULL, *id = NULL, *data;
    size_t event_len = 0, id_len = 0, len, at = 0;
    napi_valuetype type;
    /* Each field goes after the one before in scratch memory (a later one may grow it). */
    napi_typeof(env, argv[3], &type);
    if (type == napi_string) {
        if (up_node_scratch_bytes(env, &u->scratch, argv[3], 1, at, &event, &event_len) != 0)
            return number(env, -2);
        at += event_len + 1;
    }
    napi_typeof(env, argv[4], &type);
    if (type == napi_string) {
        if (up_node_scratch_bytes(env, &u->scratch, argv[4], 1, at, &id, &id_len) != 0)
            return number(env, -2);
        at += id_len + 1;
    }
    size_t id_at = at - (id != NULL ? id_len + 1 : 0);
    if (up_node_scratch_bytes(env, &u->scratch, argv[1], utf8, at, &data, &len) != 0) {
        napi_throw_type_error(env, NULL, "an event's data must be a String or a Buffer");
        return NULL;
    }
    /* scratch memory may have moved under the fields. */
    if (event != NULL)
        event = u->scratch.base;
    if (id != NULL)
        id = u->scratch.base + id_at;
    int r = up_sse_any_send(c->conn, event, event_len, id, id_len, data, len);
    up_node_scratch_trim(&u->scratch);
    return number(env, r);
}

/* upgradeClose(token, code): a WebSocket's close handshake with code (1000 when invalid), or
 * an event stream's end, behind what was written. */
static napi_value upgrade_close(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2];
    uint32_t code = UP_WS_CLOSE_NORMAL;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_client_t *c = argc == 2 ? up_node_client_of(up_node_upgrades_of(env), env, argv[0]) : NULL;
    if (c == NULL)
        return NULL;
    napi_get_value_uint32(env, argv[1], &code);
    if (c->kind == UP_UPGRADE_WEBSOCKET)
        up_ws_any_close(c->conn, code);
    else
        up_sse_any_close(c->conn);
    return NULL;
}

/* upgradePending(token): writes not yet handed to the kernel, -1 once closed or closing; above
 * 0, the drained event is owed. */
static napi_value upgrade_pending(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_client_t *c = argc == 1 ? up_node_client_of(up_node_upgrades_of(env), env, argv[0]) : NULL;
    if (c == NULL)
        return number(env, -1);
    return number(env, (double)(c->kind == UP_UPGRADE_WEBSOCKET ? up_ws_any_pending(c->conn)
                                                                : up_sse_any_pending(c->conn)));
}

/* upgradeOpen(token): whether the connection is open and not closing. */
static napi_value upgrade_open(napi_env env, napi_callback_info info)
{
    size_t argc = 1;
    napi_value argv[1];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_client_t *c = argc == 1 ? up_node_client_of(up_node_upgrades_of(env), env, argv[0]) : NULL;
    return boolean(env, c != NULL && up_conn_any_state(c->conn) == UP_CONN_OPEN);
}

/* wsPing(token[, ms]): sets a WebSocket's idle timeout when ms is given; returns it (ms). */
static napi_value ws_ping(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2];
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_client_t *c = argc >= 1 ? up_node_client_of(up_node_upgrades_of(env), env, argv[0]) : NULL;
    if (c == NULL || c->kind != UP_UPGRADE_WEBSOCKET)
        return number(env, 0);
    uint32_t ms;
    if (argc == 2 && napi_get_value_uint32(env, argv[1], &ms) == napi_ok)
        up_ws_any_set_ping(c->conn, ms);
    return number(env, up_ws_any_ping(c->conn));
}

/* ---------------------------------------------------------------- setup */

/* upgrades(options, onEvent): see upgrades.h. */
static napi_value upgrades(napi_env env, napi_callback_info info)
{
    size_t argc = 2;
    napi_value argv[2];
    uv_loop_t *uv;
    napi_get_cb_info(env, info, &argc, argv, NULL, NULL);
    up_node_server_t *srv = up_node_server_of(env);
    if (srv == NULL || argc < 2)
        return throw_error(env, "upgrades(options, onEvent) after createServer");
    if (srv->upgrades != NULL)
        return throw_error(env, "upgrades: set up already");
    if (napi_get_uv_event_loop(env, &uv) != napi_ok)
        return throw_error(env, "upgrades: no uv loop");
    up_node_upgrades_t *u = up_calloc(1, sizeof(*u));
    u->srv = srv;
    up_node_event_hooks_t hooks = {after_event, after_batch, u};
    if (up_node_event_queue_init(&u->queue, srv, uv, argv[1], &hooks) != 0) {
        free(u);
        return throw_error(env, "upgrades: out of JavaScript resources");
    }
    u->ws.max_message =
        (uint64_t)up_node_option(env, argv[0], "max_msg", UP_WS_DEFAULT_MAX_MESSAGE);
    u->ws.ping_ms = (unsigned)up_node_option(env, argv[0], "ws_ping_ms", UP_WS_DEFAULT_PING_MS);
    if (up_node_option(env, argv[0], "ws_deflate", 0) != 0)
        u->ws.compressors = up_ws_compressors_new();
    u->sse_heartbeat_ms =
        (unsigned)up_node_option(env, argv[0], "sse_heartbeat_ms", UP_SSE_DEFAULT_HEARTBEAT_MS);
    up_pubsub_callbacks_t callbacks = up_node_pubsub_callbacks;
    callbacks.data = u;
    u->pubsub = up_pubsub_new(srv->server,
                              (uint64_t)up_node_option(env, argv[0], "ws_max_pending", 4 << 20),
                              &callbacks);
    srv->upgrades = u;
    return NULL;
}

void up_node_upgrades_free(up_node_upgrades_t *u)
{
    up_node_event_queue_dispose(&u->queue);
    for (uint32_t i = 0; i < u->num_clients; i++) {
        if (u->clients[i].conn != NULL)
            up_conn_release(u->clients[i].conn);
    }
    free(u->clients);
    up_pubsub_free(u->pubsub);
    up_node_pubsub_free_users(u);
    up_ws_compressors_free(u->ws.compressors);
    up_node_scratch_free(&u->scratch);
    free(u);
}

napi_status up_node_define_upgrades(napi_env env, napi_value exports)
{
    napi_property_descriptor props[] = {
        {"upgrades", NULL, upgrades, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"upgrade", NULL, upgrade, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"wsSend", NULL, ws_send, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"sseSend", NULL, sse_send, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"upgradeClose", NULL, upgrade_close, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"upgradePending", NULL, upgrade_pending, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"upgradeOpen", NULL, upgrade_open, NULL, NULL, NULL, napi_default_jsproperty, NULL},
        {"wsPing", NULL, ws_ping, NULL, NULL, NULL, napi_default_jsproperty, NULL},
    };
    napi_status s = napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
    return s != napi_ok ? s : up_node_define_pubsub(env, exports);
}
